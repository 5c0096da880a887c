package proxylive

import (
	"strings"
	"testing"
	"time"
)

func TestListenURL(t *testing.T) {
	for _, tt := range []struct {
		line, want string
		ok         bool
	}{
		{"polite proxy: listening on http://127.0.0.1:8899 (ctrl-c stops)", "http://127.0.0.1:8899", true},
		{"polite proxy: listening on http://127.0.0.1:41231", "http://127.0.0.1:41231", true},
		{"polite proxy: listening on http://127.0.0.1:41231/.", "http://127.0.0.1:41231", true},
		{"polite proxy: listening on http://10.0.0.1:8899", "", false},
		{"time=... level=INFO msg=start", "", false},
	} {
		got, ok := listenURL(tt.line)
		if got != tt.want || ok != tt.ok {
			t.Errorf("listenURL(%q) = %q, %v, want %q, %v", tt.line, got, ok, tt.want, tt.ok)
		}
	}
}

const sampleLog = `1000.100 0.000 200 /s/0 1 1
1000.300 0.100 200 /s/1 2 1
1000.400 0.000 429 /s/2 2 2
garbage line
1001.000 0.000 404 /robots.txt 3 1
1001.200 0.050 200 /s/1 3 2
1001.900 0.000 200 /other/0 4 1
`

func TestMeasureSite(t *testing.T) {
	hits, err := parseLog(strings.NewReader(sampleLog))
	if err != nil {
		t.Fatal(err)
	}
	if len(hits) != 6 {
		t.Fatalf("parseLog: %d hits, want 6", len(hits))
	}
	f := measureSite(hits, "/s/")
	if f.Requests != 4 || f.OK != 3 || f.Refused != 1 || f.Robots != 1 {
		t.Errorf("measureSite = %+v, want 4 requests, 3 ok, 1 refused, 1 robots", f)
	}
	if f.Span != 1100*time.Millisecond {
		t.Errorf("Span = %v, want 1.1s", f.Span)
	}
	if f.P95 != 100*time.Millisecond {
		t.Errorf("P95 = %v, want 100ms", f.P95)
	}
	once, missing, dup, extra := exactlyOnce(pathCounts(hits, "/s/"), []string{"/s/0", "/s/1", "/s/3"})
	if once != 1 || missing != 1 || dup != 1 || extra != 1 {
		t.Errorf("exactlyOnce = %d %d %d %d, want 1 1 1 1", once, missing, dup, extra)
	}
	opens := connOpens(hits, "/s/")
	if want := []float64{1000.1, 1000.2, 1001.15}; len(opens) != len(want) {
		t.Errorf("connOpens = %v, want %v", opens, want)
	}
}

func TestMaxInWindow(t *testing.T) {
	for _, tt := range []struct {
		name  string
		times []float64
		want  int
	}{
		{"none", nil, 0},
		{"paced 5/s", []float64{0, 0.2, 0.4, 0.6, 0.8, 1.0, 1.2}, 5},
		{"burst", []float64{0, 0.01, 0.02, 0.03, 0.04, 0.05, 0.06, 2}, 7},
	} {
		t.Run(tt.name, func(t *testing.T) {
			if got := maxInWindow(tt.times, 1); got != tt.want {
				t.Errorf("maxInWindow = %d, want %d", got, tt.want)
			}
		})
	}
	if got := meanRate([]float64{0, 0.2, 0.4, 0.6, 0.8, 1.0}); got < 4.99 || got > 5.01 {
		t.Errorf("meanRate = %v, want 5", got)
	}
}

func TestClientStatuses(t *testing.T) {
	st := clientStatuses([]byte("200 http://a/1\n0 http://a/2 ConnectionError\nnoise\n429 http://a/3\n200 http://a/3\n"))
	if st["http://a/1"] != 200 || st["http://a/2"] != 0 || st["http://a/3"] != 200 || len(st) != 3 {
		t.Errorf("clientStatuses = %v", st)
	}
	if n := countOK(st, []string{"http://a/1", "http://a/2", "http://a/3", "http://a/4"}); n != 2 {
		t.Errorf("countOK = %d, want 2", n)
	}
}

func TestSiteConfig(t *testing.T) {
	c := Site{Rate: 20, Burst: 5, NoDelay: true, Status: 429, Cert: "/c.pem", Key: "/k.pem"}.config("/p", "127.0.0.1:1", "127.0.0.1:2")
	for _, want := range []string{"rate=20r/s", "burst=5 nodelay", "limit_req_status 429", "listen 127.0.0.1:2 ssl", "$connection_requests"} {
		if !strings.Contains(c, want) {
			t.Errorf("config lacks %q:\n%s", want, c)
		}
	}
	if c := (Site{}).config("/p", "127.0.0.1:1", ""); strings.Contains(c, "limit_req zone") || strings.Contains(c, "ssl") {
		t.Errorf("config of an unlimited plain site has limits or TLS:\n%s", c)
	}
}

func TestWriteTable(t *testing.T) {
	var b strings.Builder
	WriteTable(&b, []Row{
		{Scenario: "1", Name: "a", Measured: "x|y", Goal: "g", Pass: true},
		{Scenario: "1", Name: "b", Measured: "z"},
		{Scenario: "1", Name: "c", Goal: "g"},
		{Scenario: "1", Name: "d", Err: "boom"},
		{Scenario: "1", Name: "e", Measured: "m", Goal: "g", Pass: true, Err: "exit 1"},
	})
	for _, want := range []string{`x\|y`, "| pass |", "| baseline |", "| c |  | g | FAIL |", "error: boom | — | ERROR |", "| m error: exit 1 | g | FAIL |"} {
		if !strings.Contains(b.String(), want) {
			t.Errorf("table lacks %q:\n%s", want, b.String())
		}
	}
}

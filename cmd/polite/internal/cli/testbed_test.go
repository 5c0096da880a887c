package cli

import (
	"context"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/polite-go/polite/testbed"
)

// --site reads a [site] table; it serves on one address by default; its
// companions need it, and it excludes --config, --hosts and --pages.
func TestTestbedSiteParse(t *testing.T) {
	dir := t.TempDir()
	file := func(name, body string) string {
		p := filepath.Join(dir, name)
		os.WriteFile(p, []byte(body), 0o644)
		return p
	}
	site := file("site.toml", "[site]\nHosts = 3\nPages = 300\nSeed = 9\n[site.Host]\nRate = 5\nLatency = \"10ms\"\n")
	got, code, stderr := parse(t, "testbed", "--site", site, "--site-version", "2", "--access-log", "a.log", "--urls", "s.txt")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	o := got.(*testbedOptions)
	want := testbed.Site{Hosts: 3, Pages: 300, Seed: 9, Version: 2, Host: testbed.HostConfig{Rate: 5, Latency: 10 * time.Millisecond}}
	if o.Site == nil || o.Site.Hosts != want.Hosts || o.Site.Pages != want.Pages || o.Site.Seed != want.Seed || o.Site.Version != 2 ||
		o.Site.Host.Rate != 5 || o.Site.Host.Latency != want.Host.Latency || o.Addr != "127.0.0.1:0" || o.AccessLog != "a.log" || o.URLs != "s.txt" {
		t.Errorf("options = %+v, site %+v", o, o.Site)
	}
	got, code, _ = parse(t, "testbed", "--site", file("empty.toml", ""), "--addr", "127.0.0.1:8080", "--write-site", "www")
	if o := got.(*testbedOptions); code != 0 || o.Site == nil || o.Site.Hosts != 0 || o.Addr != "127.0.0.1:8080" || o.WriteSite != "www" {
		t.Errorf("an empty --site file: exit %d, %+v", code, o)
	}
	got, code, _ = parse(t, "testbed", "--site", file("site.json", `{"Hosts": 2, "Pages": 200}`))
	if o := got.(*testbedOptions); code != 0 || o.Site.Hosts != 2 {
		t.Errorf("--site FILE.json: exit %d, %+v", code, o)
	}
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"--site", site, "--hosts", "3"}, "give one or the other"},
		{[]string{"--site", site, "--pages", "3"}, "--pages"},
		{[]string{"--write-site", "www"}, "go with --site"},
		{[]string{"--site-version", "1"}, "go with --site"},
		{[]string{"--site", file("bad.toml", "[site]\nHosts = 3\nColour = 1\n")}, `unknown key "site.Colour"`},
		{[]string{"--site", file("few.toml", "[site]\nHosts = 10\nPages = 100\n")}, "at least 50 a host"},
		{[]string{"--site", file("ns.toml", "[site.Host]\nLatency = 50\n")}, "wants a unit"},
		{[]string{"--site", filepath.Join(dir, "missing.toml")}, "--site"},
	} {
		_, code, stderr := parse(t, append([]string{"testbed"}, tc.args...)...)
		if code != ExitUsage || !strings.Contains(stderr, tc.want) {
			t.Errorf("testbed %q: exit %d, stderr %q; want %d saying %q", tc.args, code, stderr, ExitUsage, tc.want)
		}
	}
}

// polite testbed --site serves the site by Host header on one address,
// writes the seeds and an access log; --write-site writes the static copy.
func TestTestbedSiteRun(t *testing.T) {
	dir := t.TempDir()
	site := testbed.Site{Hosts: 2, Pages: 100, Seed: 3}
	urls, logFile := filepath.Join(dir, "seeds.txt"), filepath.Join(dir, "access.log")
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var stdout, stderr syncBuffer
	done := make(chan error, 1)
	go func() {
		done <- runTestbed(ctx, &env{stdout: &stdout, stderr: &stderr},
			&testbedOptions{Site: &site, Addr: "127.0.0.1:0", URLs: urls, AccessLog: logFile})
	}()
	var addr string
	for deadline := time.Now().Add(10 * time.Second); addr == "" && time.Now().Before(deadline); {
		if m := regexp.MustCompile(`listening on (127\.0\.0\.1:\d+)`).FindStringSubmatch(stdout.String()); m != nil {
			addr = m[1]
		}
		time.Sleep(10 * time.Millisecond)
	}
	if addr == "" {
		cancel()
		t.Fatalf("no address in %q, %q; runTestbed: %v", stdout.String(), stderr.String(), <-done)
	}
	seeds, _ := os.ReadFile(urls)
	if string(seeds) != "http://h00.site.test/\nhttp://h01.site.test/\n" {
		t.Errorf("--urls wrote %q", seeds)
	}
	c := &http.Client{Transport: &http.Transport{DialContext: func(ctx context.Context, network, _ string) (net.Conn, error) {
		var d net.Dialer
		return d.DialContext(ctx, network, addr)
	}}}
	get := func(u, etag string) *http.Response {
		req, _ := http.NewRequest("GET", u, nil)
		if etag != "" {
			req.Header.Set("If-None-Match", etag)
		}
		resp, err := c.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		return resp
	}
	first := get("http://h01.site.test/", "")
	if first.StatusCode != 200 || first.Header.Get("ETag") == "" {
		t.Fatalf("GET h01 /: %d, ETag %q", first.StatusCode, first.Header.Get("ETag"))
	}
	if again := get("http://h01.site.test/", first.Header.Get("ETag")); again.StatusCode != 304 {
		t.Errorf("conditional GET: %d, want 304", again.StatusCode)
	}
	if r := get("http://h00.site.test/robots.txt", ""); r.StatusCode != 200 {
		t.Errorf("robots.txt: %d", r.StatusCode)
	}
	cancel()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	b, _ := os.ReadFile(logFile)
	var got []string
	for line := range strings.Lines(string(b)) {
		r, err := testbed.ParseRequest(line)
		if err != nil {
			t.Fatal(err)
		}
		got = append(got, r.Host+" "+r.URI+" "+http.StatusText(r.Status)+" "+map[bool]string{true: "cond", false: "-"}[r.Conditional])
	}
	want := []string{"h01.site.test / OK -", "h01.site.test / Not Modified cond", "h00.site.test /robots.txt OK -"}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("access log:\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}

	www := filepath.Join(dir, "www")
	var out syncBuffer
	if err := runTestbed(context.Background(), &env{stdout: &out, stderr: &out}, &testbedOptions{Site: &site, WriteSite: www}); err != nil {
		t.Fatal(err)
	}
	for _, f := range []string{"h00.site.test/index.html", "h01.site.test/robots.txt", "h00.site.test/sitemap_index.xml", "h00.site.test/calendar/2026-01.html"} {
		if _, err := os.Stat(filepath.Join(www, f)); err != nil {
			t.Errorf("--write-site: %v", err)
		}
	}
	if !strings.Contains(out.String(), "wrote 2 hosts, 100 pages") {
		t.Errorf("--write-site said %q", out.String())
	}
}

//go:build linux

package crawl

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/pem"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/polite-go/polite"
	"github.com/polite-go/polite/testbed"
)

// fdChildDir, in the environment, makes TestManyHostsFewFiles the child
// that runs the job at a low file limit in that directory.
const fdChildDir = "POLITE_FD_CHILD_DIR"

// fdChildLimit is the child's RLIMIT_NOFILE, far below the hosts it meets.
const fdChildLimit = 256

// A job's transport kept every host's idle connections for 30 s with no
// overall cap: against servers that keep theirs (Go's, nginx's), file
// descriptors grew with the hosts until SQLite could not open its files
// (issue 29, item 3: exit 1 after 28,784 of 100,000 one-URL hosts). A job
// in a process limited to 256 descriptors meets 2,000 hosts that each keep
// their connections, robots.txt and WARC on, and records every URL ok.
func TestManyHostsFewFiles(t *testing.T) {
	if dir := os.Getenv(fdChildDir); dir != "" {
		fdChild(t, dir)
		return
	}
	const hosts = 2000
	cfg := make([]testbed.HostConfig, hosts)
	for i := range cfg {
		cfg[i] = testbed.HostConfig{Name: fmt.Sprintf("h%d.test", i)}
	}
	srv := testbed.NewServer(cfg...)
	if err := srv.StartPerHostIP(); err != nil {
		t.Skip(err) // this parent needs a listener per host, on 127.0.0.0/8
	}
	defer srv.Close()
	var list strings.Builder
	for _, u := range srv.URLs() {
		list.WriteString(u + "/page\n")
	}
	manyHostsChild(t, "TestManyHostsFewFiles", list.String(), hosts)
}

// Servers speaking HTTP/2 keep their connections the same way, and
// net/http's MaxIdleConns bounds only HTTP/1's: 2,000 HTTPS hosts that
// each keep an HTTP/2 connection, at 256 descriptors, all end ok.
func TestManyHTTP2HostsFewFiles(t *testing.T) {
	if dir := os.Getenv(fdChildDir); dir != "" {
		fdChild(t, dir)
		return
	}
	const hosts = 2000
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/robots.txt" {
			http.NotFound(w, r)
			return
		}
		fmt.Fprint(w, r.Proto)
	}))
	srv.EnableHTTP2 = true
	srv.StartTLS()
	defer srv.Close()
	var list strings.Builder
	for i := range hosts {
		fmt.Fprintf(&list, "https://h%d.test/page\n", i)
	}
	manyHostsChild(t, "TestManyHTTP2HostsFewFiles", list.String(), hosts,
		fdChildTLS+"="+srv.Listener.Addr().String(), fdChildCert+"="+string(pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: srv.Certificate().Raw})))
}

// More of the child's environment: the address of an HTTPS server that
// every host is at, and its certificate (PEM).
const (
	fdChildTLS  = "POLITE_FD_CHILD_TLS"
	fdChildCert = "POLITE_FD_CHILD_CERT"
)

// manyHostsChild runs test as a child at fdChildLimit descriptors over
// list, with env added, and checks that its hosts URLs all ended ok.
func manyHostsChild(t *testing.T, test, list string, hosts int, env ...string) {
	t.Helper()
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "list"), []byte(list), 0o644); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute) // a bound on a hang
	defer cancel()
	cmd := exec.CommandContext(ctx, os.Args[0], "-test.run=^"+test+"$", "-test.v")
	cmd.Env = append(append(os.Environ(), fdChildDir+"="+dir), env...)
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("the job at %d descriptors: %v\n%s", fdChildLimit, err, tail(out, 4000))
	}
	res := readResults(t, dir)
	ok := 0
	var bad []string
	for _, r := range res {
		if r.Outcome == OK {
			ok++
		} else if len(bad) < 5 {
			bad = append(bad, fmt.Sprintf("%s: %s %s", r.URL, r.Outcome, r.Error))
		}
	}
	if len(res) != hosts || ok != hosts {
		t.Errorf("%d results, %d ok; want %d ok; first failures: %q\n%s", len(res), ok, hosts, bad, tail(out, 2000))
	}
}

// fdChild runs the job in dir with RLIMIT_NOFILE lowered to fdChildLimit,
// through the transport a job builds itself.
func fdChild(t *testing.T, dir string) {
	lim := syscall.Rlimit{Cur: fdChildLimit, Max: fdChildLimit}
	if err := syscall.Setrlimit(syscall.RLIMIT_NOFILE, &lim); err != nil {
		t.Fatal(err)
	}
	f, err := os.Open(filepath.Join(dir, "list"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	const workers = 32
	opts := Options{Workers: workers, Retries: -1, Timeout: 20 * time.Second, HostGiveUp: -1}
	if addr := os.Getenv(fdChildTLS); addr != "" {
		// Every host at the one server, its certificate trusted under
		// the name it has (the SNI is the same for all), as a job's own
		// transport with a dialer and a trust store of its own.
		roots := x509.NewCertPool()
		roots.AppendCertsFromPEM([]byte(os.Getenv(fdChildCert)))
		base := NewBase(workers)
		base.TLSClientConfig = &tls.Config{RootCAs: roots, ServerName: "example.com"}
		base.DialContext = func(ctx context.Context, network, _ string) (net.Conn, error) {
			return (&net.Dialer{}).DialContext(ctx, network, addr)
		}
		LimitConns(base, workers)
		opts.Transport = &polite.Transport{Base: base}
	}
	j, err := Open(dir, opts)
	if err != nil {
		t.Fatal(err)
	}
	defer j.Close()
	if _, err := j.Load(f); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	sum, err := j.Run(ctx, nil)
	t.Logf("summary %+v", sum)
	if err != nil {
		t.Fatal(err)
	}
	// Out of descriptors, SQLite's bare "unable to open database file"
	// is named for what it is.
	var held []*os.File
	defer func() {
		for _, f := range held {
			f.Close()
		}
	}()
	for range fdChildLimit {
		f, err := os.Open(os.DevNull)
		if err != nil {
			break
		}
		held = append(held, f)
	}
	sqlite := errors.New("crawl: committing to state.db: unable to open database file (14)")
	if got := namedFileErr(sqlite); !errors.Is(got, errNoFiles) || !strings.Contains(got.Error(), "unable to open database file") {
		t.Errorf("namedFileErr(%q) at the limit = %q, want it named too many open files", sqlite, got)
	}
}

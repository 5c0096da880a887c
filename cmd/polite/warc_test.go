package main_test

// The WARC files as archivists meet them (issue 18, item 6): read by
// webrecorder's warcio, a reader no one here wrote, and indexed by it and
// by polite cdxj alike.

import (
	"bufio"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/polite-go/polite/testbed"
)

// warcio returns the path of webrecorder's warcio package, installed by
// make deps; without it the test is skipped, except under CI, where it
// fails.
func warcio(t *testing.T) string {
	t.Helper()
	dir, _ := filepath.Abs("../../.tools/node_modules/warcio")
	_, err := os.Stat(filepath.Join(dir, "dist", "cli.js"))
	_, nerr := exec.LookPath("node")
	if err != nil || nerr != nil {
		if os.Getenv("CI") == "true" {
			t.Fatalf("warcio or node missing (make deps installs them): %v %v", err, nerr)
		}
		t.Skip("warcio not installed: run make deps")
	}
	return dir
}

// checkScript reads every record of the files it is given with warcio's
// WARCParser and prints, per file, the records by type, the response and
// request records without WARC-IP-Address, and the records whose digest
// (a response's payload, a warcinfo's block) is not what the header says.
const checkScript = `
const { WARCParser } = await import(process.argv[2]);
import fs from 'node:fs';
import crypto from 'node:crypto';
const b32 = (buf) => { const a = 'ABCDEFGHIJKLMNOPQRSTUVWXYZ234567'; let bits = 0, v = 0, out = '';
  for (const x of buf) { v = (v << 8) | x; bits += 8; while (bits >= 5) { out += a[(v >>> (bits - 5)) & 31]; bits -= 5; } }
  if (bits > 0) out += a[(v << (5 - bits)) & 31]; while (out.length % 8) out += '='; return out; };
const sha = (b) => 'sha256:' + b32(crypto.createHash('sha256').update(b).digest());
const out = {};
for (const file of process.argv.slice(3)) {
  const s = { types: {}, noIP: 0, badDigest: 0, targets: [] };
  for await (const r of new WARCParser(fs.createReadStream(file))) {
    s.types[r.warcType] = (s.types[r.warcType] || 0) + 1;
    const data = await r.readFully();
    if ((r.warcType === 'response' || r.warcType === 'request') && !r.warcHeader('WARC-IP-Address')) s.noIP++;
    if (r.warcType === 'response') { if (sha(data) !== r.warcPayloadDigest) s.badDigest++; s.targets.push(r.warcTargetURI); }
    if (r.warcType === 'warcinfo' && sha(data) !== r.warcHeader('WARC-Block-Digest')) s.badDigest++;
  }
  out[file.split('/').pop()] = s;
}
console.log(JSON.stringify(out));
`

func TestWARCReadByWarcio(t *testing.T) {
	t.Parallel()
	lib := warcio(t)
	a := startSite(t, testbed.HostConfig{Name: "a", Robots: "User-agent: *\nDisallow: /private/\n"})
	b := startSite(t, testbed.HostConfig{Name: "b"})
	list := urls(t, a.url+"/private/x\n", 20, a, b)
	out := t.TempDir()
	r := polite(t, "fetch", "--out", out, "--rate", "inf", "--adaptive=false", "--warc-max-size", "16KB", "--progress", "none", list)
	if r.code != 4 { // the disallowed URL ends robots_disallowed
		t.Fatalf("exit %d\n%s\n%s", r.code, r.stdout, r.stderr)
	}
	var files []string
	for _, e := range must(os.ReadDir(out)) {
		if strings.HasSuffix(e.Name(), ".warc.gz") {
			files = append(files, filepath.Join(out, e.Name()))
		}
	}
	if len(files) < 3 || filepath.Base(files[0]) != "bodies-00001.warc.gz" && filepath.Base(files[0]) != "bodies.warc.gz" {
		t.Fatalf("WARC files %v: want bodies.warc.gz and more past --warc-max-size 16KB", files)
	}

	// Every record read by warcio: digests right, addresses there.
	per := readByWarcio(t, lib, files...)
	responses, infos := map[string]bool{}, 0
	for name, s := range per {
		if s.BadDigest > 0 || s.NoIP > 0 || s.Types["warcinfo"] < 1 || s.Types["response"] != s.Types["request"] {
			t.Errorf("%s: %+v", name, s)
		}
		infos += s.Types["warcinfo"]
		for _, u := range s.Targets {
			responses[u] = true
		}
	}
	if !responses[a.url+"/robots.txt"] || !responses[b.url+"/robots.txt"] || !responses[a.url+"/page/19"] || responses[a.url+"/private/x"] {
		t.Errorf("responses recorded: %d, robots.txt of both hosts and every page wanted, the disallowed URL not", len(responses))
	}
	if len(responses) != 42 || infos != len(files) {
		t.Errorf("%d responses (want 40 pages and 2 robots.txt), %d warcinfo records in %d files", len(responses), infos, len(files))
	}

	// warcio's own index and polite cdxj agree line for line.
	theirs := sortedLines(t, exec.Command("node", append([]string{filepath.Join(lib, "dist", "cli.js"), "cdx-index"}, files...)...))
	ours := sortedLines(t, exec.Command(bin, "cdxj", out))
	if !slices.Equal(theirs, ours) {
		t.Errorf("warcio cdx-index and polite cdxj differ:\nwarcio: %q\npolite: %q", head(theirs), head(ours))
	}
	// -w writes the same index to out/index.cdxj.
	if r := polite(t, "cdxj", "-w", out); r.code != 0 {
		t.Fatalf("polite cdxj -w: exit %d: %s", r.code, r.stderr)
	}
	written := strings.Split(strings.TrimSpace(string(must(os.ReadFile(filepath.Join(out, "index.cdxj"))))), "\n")
	slices.Sort(written)
	if !slices.Equal(written, ours) {
		t.Errorf("index.cdxj differs from polite cdxj's output")
	}
	if r := polite(t, "cdxj", t.TempDir()); r.code != 1 || !strings.Contains(r.stderr, "no WARC files") {
		t.Errorf("polite cdxj on a folder without WARC files: exit %d, %q", r.code, r.stderr)
	}
	// And results.jsonl points at each page's response record.
	at := map[string]string{}
	for _, l := range ours {
		var e struct{ URL, Offset, Filename string }
		json.Unmarshal([]byte(l[strings.IndexByte(l, '{'):]), &e)
		at[e.URL] = e.Filename + "@" + e.Offset
	}
	f := must(os.Open(filepath.Join(out, "results.jsonl")))
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		var res struct {
			URL, Outcome string
			File         string `json:"warc_file"`
			Off          *int64 `json:"warc_offset"`
		}
		json.Unmarshal(sc.Bytes(), &res)
		if res.Outcome != "ok" {
			continue
		}
		if res.Off == nil || at[res.URL] != res.File+"@"+itoa(*res.Off) {
			t.Errorf("%s: results.jsonl says %s@%v, the index %s", res.URL, res.File, res.Off, at[res.URL])
		}
	}
}

// indexed runs polite cdxj on a job's folder and returns how many
// response records each URL has.
func indexed(t *testing.T, out string) map[string]int {
	t.Helper()
	idx := polite(t, "cdxj", out)
	if idx.code != 0 {
		t.Fatalf("polite cdxj: exit %d: %s", idx.code, idx.stderr)
	}
	in := map[string]int{}
	for _, l := range strings.Split(strings.TrimSpace(idx.stdout), "\n") {
		var e struct{ URL string }
		json.Unmarshal([]byte(l[strings.IndexByte(l, '{'):]), &e)
		in[e.URL]++
	}
	return in
}

// warcioStats is what checkScript says of one file.
type warcioStats struct {
	Types           map[string]int
	NoIP, BadDigest int
	Targets         []string
}

// readByWarcio reads every record of files with warcio (lib) through
// checkScript, and returns what it says of each, by file name.
func readByWarcio(t *testing.T, lib string, files ...string) map[string]warcioStats {
	t.Helper()
	script := filepath.Join(t.TempDir(), "check.mjs")
	os.WriteFile(script, []byte(checkScript), 0o644)
	b, err := exec.Command("node", append([]string{script, filepath.Join(lib, "dist", "index.js")}, files...)...).CombinedOutput()
	if err != nil {
		t.Fatalf("warcio: %v\n%s", err, b)
	}
	var per map[string]warcioStats
	if err := json.Unmarshal(b, &per); err != nil {
		t.Fatalf("warcio's output %q: %v", b, err)
	}
	return per
}

func sortedLines(t *testing.T, cmd *exec.Cmd) []string {
	t.Helper()
	b, err := cmd.Output()
	if err != nil {
		t.Fatalf("%s: %v", cmd, err)
	}
	lines := strings.Split(strings.TrimSpace(string(b)), "\n")
	slices.Sort(lines)
	return lines
}

func head(l []string) []string { return l[:min(len(l), 2)] }

func itoa(n int64) string { b, _ := json.Marshal(n); return string(b) }

func must[T any](v T, err error) T {
	if err != nil {
		panic(err)
	}
	return v
}

// Each redirect hop is a response record of its own (issue 29, item 11),
// read by warcio like every other: its URL, its status, its address; the
// page under the URL that answered, where results.jsonl points; and warcio's
// index and polite cdxj still agree line for line.
func TestWARCRedirectHopsReadByWarcio(t *testing.T) {
	t.Parallel()
	lib := warcio(t)
	b := startSite(t, testbed.HostConfig{Name: "b"})
	ln := must(net.Listen("tcp", "127.0.0.1:0"))
	a := "http://" + ln.Addr().String()
	srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/robots.txt":
			http.NotFound(w, r)
		case "/r":
			http.Redirect(w, r, "/r2", http.StatusMovedPermanently)
		default:
			http.Redirect(w, r, b.url+"/page/0", http.StatusFound)
		}
	})}
	go srv.Serve(ln)
	t.Cleanup(func() { srv.Close() })
	list := filepath.Join(t.TempDir(), "urls.txt")
	os.WriteFile(list, []byte(a+"/r\n"), 0o644)
	out := t.TempDir()
	if r := polite(t, "fetch", "--out", out, "--rate", "inf", "--allow-private", "--progress", "none", list); r.code != 0 {
		t.Fatalf("exit %d\n%s\n%s", r.code, r.stdout, r.stderr)
	}
	file := filepath.Join(out, "bodies.warc.gz")
	s := readByWarcio(t, lib, file)["bodies.warc.gz"]
	var pages []string
	for _, u := range s.Targets {
		if !strings.HasSuffix(u, "/robots.txt") {
			pages = append(pages, u)
		}
	}
	if want := []string{a + "/r", a + "/r2", b.url + "/page/0"}; !slices.Equal(pages, want) || s.BadDigest > 0 || s.NoIP > 0 || s.Types["response"] != s.Types["request"] {
		t.Errorf("warcio read %+v; want the responses %q in order, digests right, addresses there", s, want)
	}
	theirs := sortedLines(t, exec.Command("node", filepath.Join(lib, "dist", "cli.js"), "cdx-index", file))
	ours := sortedLines(t, exec.Command(bin, "cdxj", out))
	if !slices.Equal(theirs, ours) {
		t.Errorf("warcio cdx-index and polite cdxj differ:\nwarcio: %q\npolite: %q", theirs, ours)
	}
	var res struct {
		Final string `json:"final_url"`
		Off   *int64 `json:"warc_offset"`
	}
	json.Unmarshal(must(os.ReadFile(filepath.Join(out, "results.jsonl"))), &res)
	var at string
	for _, l := range ours {
		var e struct{ URL, Offset string }
		json.Unmarshal([]byte(l[strings.IndexByte(l, '{'):]), &e)
		if e.URL == b.url+"/page/0" {
			at = e.Offset
		}
	}
	if res.Final != b.url+"/page/0" || res.Off == nil || itoa(*res.Off) != at {
		t.Errorf("results.jsonl: final_url %q at %v; want %s/page/0 at the index's %s", res.Final, res.Off, b.url, at)
	}
}

// Killed at random moments while URLs are mid-chain, a job's WARC files
// hold each hop's response exactly once after the resume, as each URL's
// final one: a hop's records reach the files with its URL's result, in one
// commit (issue 29, item 11, with issue 17's kill -9 guarantee).
func TestKillAndResumeRedirectHops(t *testing.T) {
	t.Parallel()
	var bases []string
	for range 4 {
		ln := must(net.Listen("tcp", "127.0.0.1:0"))
		srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			switch p := r.URL.Path; {
			case p == "/robots.txt":
				http.NotFound(w, r)
			case strings.HasPrefix(p, "/page/"):
				http.Redirect(w, r, "/final/"+strings.TrimPrefix(p, "/page/"), http.StatusFound)
			default:
				time.Sleep(2 * time.Millisecond)
				w.Write([]byte("final " + p))
			}
		})}
		go srv.Serve(ln)
		t.Cleanup(func() { srv.Close() })
		bases = append(bases, "http://"+ln.Addr().String())
	}
	const perHost = 300
	var b strings.Builder
	for i := range perHost {
		for _, u := range bases {
			fmt.Fprintf(&b, "%s/page/%d\n", u, i)
		}
	}
	list := filepath.Join(t.TempDir(), "urls.txt")
	os.WriteFile(list, []byte(b.String()), 0o644)
	out := t.TempDir()
	args := []string{"fetch", "--out", out, "--rate", "200", "--burst", "5", "--concurrency", "4",
		"--adaptive=false", "--warc-max-size", "64KB", "--progress", "none", list}
	for kill := range 3 {
		cmd := exec.Command(bin, args...)
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		time.Sleep(time.Duration(300+200*kill) * time.Millisecond)
		cmd.Process.Kill() // SIGKILL
		cmd.Wait()
		t.Logf("kill %d: %d URLs finished so far", kill+1, len(results(t, out, true)))
	}
	if r := polite(t, args...); r.code != 0 {
		t.Fatalf("exit %d, want 0\n%s\n%s", r.code, r.stdout, r.stderr)
	}
	inWARC := indexed(t, out)
	res := results(t, out, false)
	if len(res) != perHost*len(bases) {
		t.Errorf("%d results, want %d", len(res), perHost*len(bases))
	}
	bad := 0
	for _, r := range res {
		final := strings.Replace(r.URL, "/page/", "/final/", 1)
		if (inWARC[r.URL] != 1 || inWARC[final] != 1) && bad < 5 {
			bad++
			t.Errorf("%s: %d response records, its final %d; want 1 and 1", r.URL, inWARC[r.URL], inWARC[final])
		}
	}
	if n := 2*len(res) + len(bases); len(inWARC) != n {
		t.Errorf("%d URLs in the WARC files, want %d (each hop, each final page, each robots.txt)", len(inWARC), n)
	}
}

package crawl

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"
)

// WARCFiles returns the names of the WARC files in a job's directory, in
// the order they were written, and whether they are gzipped.
func WARCFiles(dir string) (names []string, gzipped bool, err error) {
	for _, gz := range []bool{true, false} {
		for i := 0; ; i++ {
			name := WARCName(i, gz)
			if _, err := os.Stat(filepath.Join(dir, name)); err != nil {
				if errors.Is(err, fs.ErrNotExist) {
					break
				}
				return nil, false, fmt.Errorf("crawl: %w", err)
			}
			names = append(names, name)
		}
		if len(names) > 0 {
			return names, gz, nil
		}
	}
	return nil, false, fmt.Errorf("crawl: %s holds no WARC files (bodies.warc.gz or bodies.warc): was the job run with --bodies warc?", dir)
}

// WriteCDXJ writes a CDXJ index of the response records in a job's WARC
// files to w, sorted as replay tools (pywb, ReplayWeb.page) want it: one
// line per record, its SURT key, its 14-digit timestamp and a JSON block
// with url, mime, status, digest, length, offset and filename. It returns
// the lines written.
func WriteCDXJ(dir string, w io.Writer) (int, error) {
	names, gz, err := WARCFiles(dir)
	if err != nil {
		return 0, err
	}
	type entry struct {
		key, ts string
		block   []byte
	}
	var lines []entry
	for _, name := range names {
		f, err := os.Open(filepath.Join(dir, name))
		if err != nil {
			return 0, fmt.Errorf("crawl: %w", err)
		}
		err = ReadWARC(f, gz, func(r WARCRecord) error {
			if r.Header.Get("WARC-Type") != "response" {
				return nil
			}
			target := r.Header.Get("WARC-Target-URI")
			key, err := SURT(target)
			if err != nil {
				return nil // a record of a URL we cannot key: left out of the index
			}
			at, err := time.Parse(time.RFC3339Nano, r.Header.Get("WARC-Date"))
			if err != nil {
				return fmt.Errorf("WARC-Date %q of the record at %d: %w", r.Header.Get("WARC-Date"), r.Offset, err)
			}
			block, _ := json.Marshal(struct {
				URL      string `json:"url"`
				MIME     string `json:"mime,omitempty"`
				Status   string `json:"status,omitempty"`
				Digest   string `json:"digest,omitempty"`
				Length   string `json:"length"`
				Offset   string `json:"offset"`
				Filename string `json:"filename"`
			}{target, r.MIME, statusString(r.Status), digestValue(r.Header.Get("WARC-Payload-Digest")),
				fmt.Sprint(r.Length), fmt.Sprint(r.Offset), name})
			lines = append(lines, entry{key, at.UTC().Format("20060102150405"), block})
			return nil
		})
		f.Close()
		if err != nil {
			return 0, fmt.Errorf("crawl: %s: %w", name, err)
		}
	}
	slices.SortStableFunc(lines, func(a, b entry) int {
		if c := strings.Compare(a.key, b.key); c != 0 {
			return c
		}
		return strings.Compare(a.ts, b.ts)
	})
	bw := bufio.NewWriter(w)
	for _, l := range lines {
		bw.WriteString(l.key)
		bw.WriteByte(' ')
		bw.WriteString(l.ts)
		bw.WriteByte(' ')
		bw.Write(l.block)
		bw.WriteByte('\n')
	}
	return len(lines), bw.Flush()
}

// digestValue is a WARC digest without its algorithm's name, as webrecorder's
// warcio and pywb write it in an index.
func digestValue(d string) string {
	if _, v, ok := strings.Cut(d, ":"); ok {
		return v
	}
	return d
}

func statusString(s int) string {
	if s == 0 {
		return ""
	}
	return fmt.Sprint(s)
}

// SURT returns the Sort-friendly URI Reordering Transform of an http(s) URL,
// the key CDX indexes sort by, as pywb computes it: the host lower-cased
// without a leading www, its labels reversed and joined by commas, the port
// when it is not the scheme's default, then ")" and the path and query
// (its arguments sorted), lower-cased; no scheme, no fragment. IPv4
// addresses are reversed like names, as webrecorder's warcio and pywb do.
// "http://www.Example.com:8080/a/B?z=1&a=2" becomes
// "com,example:8080)/a/b?a=2&z=1".
func SURT(raw string) (string, error) {
	u, err := url.Parse(raw)
	if err != nil {
		return "", err
	}
	if u.Scheme != "http" && u.Scheme != "https" || u.Host == "" {
		return "", fmt.Errorf("crawl: SURT of %q: want an http or https URL", raw)
	}
	host, port := strings.ToLower(u.Hostname()), u.Port()
	if port == "80" && u.Scheme == "http" || port == "443" && u.Scheme == "https" {
		port = ""
	}
	var b strings.Builder
	if strings.Contains(host, ":") {
		b.WriteString("[" + host + "]") // IPv6: kept as it is
	} else { // names, and IPv4 addresses too, as warcio and pywb do
		host = strings.TrimSuffix(host, ".")
		if rest, ok := strings.CutPrefix(host, "www."); ok && strings.Contains(rest, ".") {
			host = rest
		}
		labels := strings.Split(host, ".")
		slices.Reverse(labels)
		b.WriteString(strings.Join(labels, ","))
	}
	if port != "" {
		b.WriteString(":" + port)
	}
	b.WriteByte(')')
	path := u.EscapedPath()
	if path == "" {
		path = "/"
	}
	b.WriteString(strings.ToLower(path))
	if u.RawQuery != "" {
		args := strings.Split(u.RawQuery, "&")
		slices.Sort(args)
		b.WriteByte('?')
		b.WriteString(strings.ToLower(strings.Join(args, "&")))
	}
	return b.String(), nil
}

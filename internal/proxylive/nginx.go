package proxylive

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/polite-go/polite/internal/politeness"
)

// Site is nginx on loopback serving a static 1 KiB page for every path,
// over plain HTTP and, given a certificate, over HTTPS on a second port.
type Site struct {
	// Rate and Burst configure limit_req (requests per second; 0: none).
	Rate, Burst int
	// NoDelay answers beyond the burst at once; without it nginx holds
	// requests over the rate in its queue (up to Burst) and refuses beyond.
	NoDelay bool
	// Status is limit_req_status; 0 means 503.
	Status int
	// Cert and Key are PEM files for an HTTPS listener; empty: none.
	Cert, Key string
}

// logFormat is each access log line: when the response ended, how long
// the request took, its status and path, and which connection it came on
// (nginx numbers connections; $connection_requests 1 is a connection's
// first request).
const logFormat = `$msec $request_time $status $request_uri $connection $connection_requests`

// config is nginx.conf for the site with everything (pid, logs, temp
// files) under prefix; tlsAddr is empty without a certificate.
func (s Site) config(prefix, addr, tlsAddr string) string {
	status := s.Status
	if status == 0 {
		status = 503
	}
	limits := ""
	if s.Rate > 0 {
		limits = fmt.Sprintf("limit_req zone=rq burst=%d", s.Burst)
		if s.NoDelay {
			limits += " nodelay"
		}
		limits += fmt.Sprintf(";\n      limit_req_status %d;", status)
	}
	tls := ""
	if tlsAddr != "" {
		tls = fmt.Sprintf("listen %s ssl;\n    ssl_certificate %s;\n    ssl_certificate_key %s;", tlsAddr, s.Cert, s.Key)
	}
	user := ""
	if os.Geteuid() == 0 {
		user = "user root;" // workers read the temp prefix, private to root
	}
	// One zone key for every client: the site's capacity is what they all
	// share (a limited site is measured on one port).
	return fmt.Sprintf(`%s
worker_processes 1;
pid %[2]s/nginx.pid;
error_log %[2]s/error.log warn;
events { worker_connections 4096; }
http {
  log_format live '%[3]s';
  access_log off;
  keepalive_requests 100000;
  client_body_temp_path %[2]s/tmp/body;
  proxy_temp_path %[2]s/tmp/proxy;
  limit_req_zone $server_port zone=rq:1m rate=%[4]dr/s;
  server {
    listen %[5]s;
    %[6]s
    access_log %[2]s/access.log live buffer=64k flush=1s;
    location = /robots.txt { return 404; }
    location / {
      %[7]s
      root %[2]s/html;
      try_files /page.html =404;
    }
  }
}
`, user, prefix, logFormat, max(s.Rate, 1), addr, tls, limits)
}

// nginx is an nginx process serving one Site.
type nginx struct {
	*politeness.NginxProc
	// URL is the plain HTTP origin (http://127.0.0.1:PORT), TLSPort the
	// HTTPS listener's port (0 without one).
	URL     string
	TLSPort int
}

// startNginx runs nginx serving site on free loopback ports until stop.
func startNginx(ctx context.Context, prefix string, site Site) (*nginx, error) {
	addr, err := politeness.FreeLoopbackAddr()
	if err != nil {
		return nil, err
	}
	tlsAddr, tlsPort := "", 0
	if site.Cert != "" {
		if tlsAddr, err = politeness.FreeLoopbackAddr(); err != nil {
			return nil, err
		}
		_, p, _ := net.SplitHostPort(tlsAddr)
		tlsPort, _ = strconv.Atoi(p)
	}
	p, err := politeness.RunNginx(ctx, prefix, site.config(prefix, addr, tlsAddr), addr)
	if err != nil {
		return nil, fmt.Errorf("proxylive: %w", err)
	}
	return &nginx{NginxProc: p, URL: "http://" + addr, TLSPort: tlsPort}, nil
}

// TLSURL is the HTTPS origin under name (localhost or 127.0.0.1).
func (n *nginx) TLSURL(name string) string { return fmt.Sprintf("https://%s:%d", name, n.TLSPort) }

// stop stops nginx, flushing its log.
func (n *nginx) stop() { n.Stop() }

// hits stops nginx (flushing its log) and reads the access log.
func (n *nginx) hits() ([]Hit, error) {
	n.stop()
	f, err := os.Open(filepath.Join(n.Prefix, "access.log"))
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return parseLog(f)
}

// Hit is one line of nginx's access log.
type Hit struct {
	End     float64 // $msec, Unix seconds
	Took    float64 // $request_time, seconds
	Status  int
	Path    string
	Conn    int64 // $connection
	ConnReq int   // $connection_requests: 1 for a connection's first request
}

// Arrival is when the request arrived (its end less its time).
func (h Hit) Arrival() float64 { return h.End - h.Took }

// parseLog reads access log lines in logFormat; malformed lines are skipped.
func parseLog(f io.Reader) ([]Hit, error) {
	var out []Hit
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for sc.Scan() {
		fs := strings.Fields(sc.Text())
		if len(fs) < 6 {
			continue
		}
		var h Hit
		var errs [5]error
		h.End, errs[0] = strconv.ParseFloat(fs[0], 64)
		h.Took, errs[1] = strconv.ParseFloat(fs[1], 64)
		h.Status, errs[2] = strconv.Atoi(fs[2])
		h.Path = fs[3]
		h.Conn, errs[3] = strconv.ParseInt(fs[4], 10, 64)
		h.ConnReq, errs[4] = strconv.Atoi(fs[5])
		if errors.Join(errs[:]...) != nil {
			continue
		}
		out = append(out, h)
	}
	return out, sc.Err()
}

func lastLine(s string) string {
	s = strings.TrimSpace(s)
	if i := strings.LastIndexByte(s, '\n'); i >= 0 {
		s = s[i+1:]
	}
	return s
}

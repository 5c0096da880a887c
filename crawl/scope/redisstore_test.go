package scope

import (
	"fmt"
	"net/url"
	"strings"
)

// redisNormalizeURL is a copy of redisstore.NormalizeURL (redisstore/
// normalize.go, with its removeDots), the fleet frontier's normaliser.
// scope does not import redisstore; the tests check that every URL
// Normalize returns is a fixed point of these rules, so that a URL scope
// hands the frontier is stored as it is.
func redisNormalizeURL(raw string) (string, error) {
	u, err := url.Parse(strings.TrimSpace(raw))
	if err != nil {
		return "", fmt.Errorf("redisstore: frontier: %w", err)
	}
	u.Scheme = strings.ToLower(u.Scheme)
	if u.Scheme != "http" && u.Scheme != "https" {
		return "", fmt.Errorf("redisstore: frontier: %q: not an http or https URL", raw)
	}
	if u.Host == "" {
		return "", fmt.Errorf("redisstore: frontier: %q: no host", raw)
	}
	host, port := u.Hostname(), u.Port()
	host = strings.ToLower(host)
	if strings.Contains(host, ":") {
		host = "[" + host + "]"
	}
	if (u.Scheme == "http" && port == "80") || (u.Scheme == "https" && port == "443") {
		port = ""
	}
	if port != "" {
		host += ":" + port
	}
	u.Host = host
	u.Fragment, u.RawFragment = "", ""
	p := u.EscapedPath()
	if p == "" {
		p = "/"
	} else {
		p = redisRemoveDots(p)
	}
	if q, err := url.PathUnescape(p); err == nil {
		u.Path, u.RawPath = q, p
	} else {
		return "", fmt.Errorf("redisstore: frontier: %q: %w", raw, err)
	}
	return u.String(), nil
}

func redisRemoveDots(p string) string {
	if !strings.HasPrefix(p, "/") {
		p = "/" + p
	}
	segs := strings.Split(p[1:], "/")
	out := make([]string, 0, len(segs))
	for i, s := range segs {
		last := i == len(segs)-1
		switch s {
		case ".":
			if last {
				out = append(out, "")
			}
		case "..":
			if len(out) > 0 {
				out = out[:len(out)-1]
			}
			if last {
				out = append(out, "")
			}
		default:
			out = append(out, s)
		}
	}
	return "/" + strings.Join(out, "/")
}

package links

import (
	"bytes"
	"net/http"
	"strings"
)

// fields calls fn for each token of v separated by ASCII whitespace and
// commas: the separators of rel values (ASCII whitespace; a comma there is
// a mistake worth forgiving) and of robots directives.
func fields(v []byte, fn func(tok []byte)) {
	i := 0
	for i < len(v) {
		for i < len(v) && isSep(v[i]) {
			i++
		}
		start := i
		for i < len(v) && !isSep(v[i]) {
			i++
		}
		if i > start {
			fn(v[start:i])
		}
	}
}

func isSep(c byte) bool {
	return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\f' || c == ','
}

// equalFold reports whether a and b are equal under ASCII case folding,
// the HTML spec's "ASCII case-insensitive" (bytes.EqualFold would also
// fold 'ſ' to 's' and the Kelvin sign to 'k').
func equalFold[A, B ~string | ~[]byte](a A, b B) bool {
	if len(a) != len(b) {
		return false
	}
	for i := 0; i < len(a); i++ {
		x, y := a[i], b[i]
		if 'A' <= x && x <= 'Z' {
			x += 'a' - 'A'
		}
		if 'A' <= y && y <= 'Z' {
			y += 'a' - 'A'
		}
		if x != y {
			return false
		}
	}
	return true
}

// relNoFollow reports whether a rel attribute holds "nofollow", or
// "sponsored" or "ugc", which Google treats as nofollow hints.
func relNoFollow(rel []byte) bool {
	no := false
	fields(rel, func(t []byte) {
		if equalFold(t, "nofollow") || equalFold(t, "sponsored") || equalFold(t, "ugc") {
			no = true
		}
	})
	return no
}

// assetRels are the rel tokens of a <link> to a resource the page loads.
var assetRels = []string{
	"stylesheet", "icon", "apple-touch-icon", "apple-touch-icon-precomposed",
	"apple-touch-startup-image", "mask-icon", "manifest", "preload",
	"modulepreload", "prefetch",
}

// linkKind returns the kind of a <link> with the rel attribute rel: Asset
// when a token is an asset rel, 0 (no link) when the tokens are only
// dns-prefetch and preconnect, whose href names an origin, not a
// document, and Related otherwise.
func linkKind(rel []byte) Kind {
	asset, origin, other := false, false, false
	fields(rel, func(t []byte) {
		switch {
		case equalFold(t, "dns-prefetch"), equalFold(t, "preconnect"):
			origin = true
		default:
			for _, a := range assetRels {
				if equalFold(t, a) {
					asset = true
					return
				}
			}
			other = true
		}
	})
	switch {
	case asset:
		return Asset
	case origin && !other:
		return 0
	}
	return Related
}

// productToken returns the product token of a user agent: the part before
// the first '/' or space.
func productToken(agent string) string {
	if i := strings.IndexAny(agent, "/ \t"); i >= 0 {
		agent = agent[:i]
	}
	return agent
}

// directives reports whether a robots directive list ("noindex, nofollow",
// "NONE") says nofollow and noindex.
func directives(v []byte) (nofollow, noindex bool) {
	fields(v, func(t []byte) {
		switch {
		case equalFold(t, "none"):
			nofollow, noindex = true, true
		case equalFold(t, "nofollow"):
			nofollow = true
		case equalFold(t, "noindex"):
			noindex = true
		}
	})
	return nofollow, noindex
}

// meta handles a <meta> element: robots directives addressed to everyone
// or to the agent, and the first refresh.
func (p *parser) meta(name, content, equiv []byte) {
	name = bytes.Trim(name, " \t\n\r\f")
	if name != nil && (equalFold(name, "robots") || len(p.agent) > 0 && equalFold(name, p.agent)) {
		nf, ni := directives(content)
		p.page.NoFollow = p.page.NoFollow || nf
		p.page.NoIndex = p.page.NoIndex || ni
	}
	if p.page.Refresh == "" && equalFold(bytes.Trim(equiv, " \t\n\r\f"), "refresh") {
		if u := refreshURL(content); u != nil {
			if ref, drop := p.clean(u); !drop {
				p.page.Refresh, _ = p.base.resolve(ref, &p.out)
			}
		}
	}
}

// refreshURL returns the URL of a refresh declaration ("5; url='/next'"),
// following HTML's "shared declarative refresh steps", or nil for
// one without a URL.
func refreshURL(v []byte) []byte {
	v = bytes.TrimLeft(v, " \t\n\r\f")
	i := 0
	for i < len(v) && ('0' <= v[i] && v[i] <= '9' || v[i] == '.') {
		i++
	}
	if i == 0 || i == len(v) {
		return nil
	}
	switch v[i] {
	case ';', ',', ' ', '\t', '\n', '\r', '\f':
	default:
		return nil
	}
	v = bytes.TrimLeft(v[i:], " \t\n\r\f")
	if len(v) > 0 && (v[0] == ';' || v[0] == ',') {
		v = bytes.TrimLeft(v[1:], " \t\n\r\f")
	}
	if len(v) >= 3 && equalFold(v[:3], "url") {
		if w := bytes.TrimLeft(v[3:], " \t\n\r\f"); len(w) > 0 && w[0] == '=' {
			v = bytes.TrimLeft(w[1:], " \t\n\r\f")
		}
	}
	if len(v) > 0 && (v[0] == '\'' || v[0] == '"') {
		q := v[0]
		v = v[1:]
		if j := bytes.IndexByte(v, q); j >= 0 {
			v = v[:j]
		}
	}
	v = bytes.TrimRight(v, " \t\n\r\f")
	if len(v) == 0 {
		return nil
	}
	return v
}

// knownValued are the X-Robots-Tag directives with a value after a colon,
// which are not agent names.
var knownValued = []string{"unavailable_after", "max-snippet", "max-image-preview", "max-video-preview"}

// RobotsHeader reports whether the X-Robots-Tag header fields of h say
// nofollow and noindex ("none" says both) for every crawler or for agent
// (its product token, compared case-insensitively).
//
// Each field is a comma-separated list of directives, optionally scoped
// to a crawler as Google documents: "X-Robots-Tag: polite: noindex,
// nofollow" scopes both directives to polite, and a later "otherbot:
// nofollow" in the same field rescopes what follows it. Unknown directives
// are ignored.
func RobotsHeader(h http.Header, agent string) (nofollow, noindex bool) {
	tok := productToken(agent)
	for _, v := range h.Values("X-Robots-Tag") {
		applies := true
		for item := range strings.SplitSeq(v, ",") {
			item = strings.TrimSpace(item)
			if name, rest, ok := strings.Cut(item, ":"); ok {
				name = strings.TrimSpace(name)
				valued := false
				for _, k := range knownValued {
					valued = valued || equalFold(name, k)
				}
				if !valued {
					applies = equalFold(name, tok) && tok != ""
					item = rest
				}
			}
			if !applies {
				continue
			}
			nf, ni := directives([]byte(item))
			nofollow = nofollow || nf
			noindex = noindex || ni
		}
	}
	return nofollow, noindex
}

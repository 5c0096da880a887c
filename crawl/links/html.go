package links

import (
	"bytes"
	"fmt"
	"io"
	"net/url"

	"golang.org/x/net/html"
	"golang.org/x/net/html/atom"
)

// DefaultMaxLinks is the number of links HTML keeps from one page when
// Options.MaxLinks is zero.
const DefaultMaxLinks = 10000

// Kind says where a link was found.
type Kind uint8

const (
	// Anchor is a hyperlink: <a href>, <area href>.
	Anchor Kind = iota + 1
	// Frame is a document embedded in the page: <iframe src>, <frame src>.
	Frame
	// Related is a <link href> whose rel is not one of the asset rels:
	// alternate, next, prev, canonical, author, license, a <link> without
	// rel, and so on.
	Related
	// Asset is a resource the page loads to render itself: <img src>, the
	// candidates of <img srcset> and <source srcset>, <script src>,
	// <source src>, <video src>, <video poster>, <audio src>, <track src>,
	// <embed src>, <object data>, and <link href> with rel stylesheet,
	// icon, apple-touch-icon, mask-icon, manifest, preload, modulepreload
	// or prefetch. HTML returns them only with Options.Assets.
	Asset
)

// String returns "anchor", "frame", "related" or "asset".
func (k Kind) String() string {
	switch k {
	case Anchor:
		return "anchor"
	case Frame:
		return "frame"
	case Related:
		return "related"
	case Asset:
		return "asset"
	}
	return fmt.Sprintf("Kind(%d)", uint8(k))
}

// Link is one link of a page.
type Link struct {
	// URL is the link's absolute http or https URL: the attribute value
	// resolved against the page's base (RFC 3986 §5.2), without its
	// fragment. It is not otherwise normalised (host case, default port,
	// query order and percent-escapes of printable ASCII stay as written);
	// what a browser would percent-encode (spaces, non-ASCII bytes,
	// quotes and angle brackets) is percent-encoded.
	URL string
	// Kind says which element and attribute the link came from.
	Kind Kind
	// NoFollow is true when the element's rel contains "nofollow",
	// "sponsored" or "ugc" (case-insensitively). It does not reflect
	// <meta name=robots>: see Page.NoFollow.
	NoFollow bool
}

// Options tunes HTML. The zero value is the default.
type Options struct {
	// Assets makes HTML return Asset links too.
	Assets bool
	// MaxLinks is the most links HTML appends for one page; zero or less
	// means DefaultMaxLinks. Beyond it HTML reads the page to its end, for
	// <meta name=robots> and <base>, but keeps no more links and sets
	// Page.Truncated.
	MaxLinks int
}

// Page is what HTML found out about a page besides its links.
type Page struct {
	// Base is the URL the links were resolved against, without fragment:
	// that of the first <base href> (itself resolved against the page
	// URL), or the page URL.
	Base string
	// NoFollow is true when a <meta name=robots> or <meta name=AGENT>
	// says "nofollow" or "none". HTML still returns the links: the caller
	// decides.
	NoFollow bool
	// NoIndex is true when such a meta element says "noindex" or "none".
	NoIndex bool
	// Truncated is true when the page had more than Options.MaxLinks links.
	Truncated bool
	// Bad counts the link attributes dropped because they do not parse as
	// a URL or resolve to no host ("http:x", "http:///x"). Links with other
	// schemes (javascript:, mailto:, data:, tel:, ...) and same-document
	// links ("", "#top") are dropped without being counted.
	Bad int
	// Refresh is the URL of the first <meta http-equiv=refresh> with a
	// URL ("5; url=/next"), resolved like a link, or "" when there is none
	// or it is not http(s). It is not among the links; a crawler follows
	// it as it would a redirect.
	Refresh string
}

// HTML reads an HTML document from r, appends its links to dst and returns
// it, with what else it found out about the page. See the package
// documentation for which elements and attributes count and how URLs are
// resolved.
//
// HTML streams r through golang.org/x/net/html's tokenizer and never builds
// the tree: it holds the largest token of the page (an inline script, a
// long comment) and the links it keeps. The caller bounds r (io.LimitReader
// by its body limit).
//
// base is the URL the page was fetched from, after redirects; it must be an
// absolute http or https URL. agent is the crawler's product token
// ("polite"; anything from the first '/' or space on is ignored), so that
// <meta name="polite" content="nofollow"> counts like name="robots".
//
// HTML returns r's read error, other than io.EOF, with the links found
// before it.
func HTML(dst []Link, r io.Reader, base *url.URL, agent string, opts Options) ([]Link, Page, error) {
	p := parser{
		dst:     dst,
		start:   len(dst),
		max:     opts.MaxLinks,
		assets:  opts.Assets,
		pageURL: base,
		base:    base,
		agent:   productToken(agent),
	}
	if p.max <= 0 {
		p.max = DefaultMaxLinks
	}
	if p.base == nil {
		p.base = &url.URL{}
	}
	z := html.NewTokenizer(r)
	for {
		tt := z.Next()
		switch tt {
		case html.ErrorToken:
			p.page.Base = withoutFragment(p.base)
			if err := z.Err(); err != io.EOF {
				return p.dst, p.page, fmt.Errorf("links: reading HTML of %s: %w", p.page.Base, err)
			}
			return p.dst, p.page, nil
		case html.StartTagToken, html.SelfClosingTagToken:
			a := tagAtom(z.Raw()[1:])
			switch a {
			case atom.Noscript:
				// We are a user agent without scripting, for which
				// <noscript> holds markup, not text (HTML §13.2.5.1):
				// its links are what such a client is offered.
				if tt == html.StartTagToken {
					z.NextIsNotRawText()
				}
				continue
			case atom.Svg, atom.Math:
				if tt == html.StartTagToken {
					p.foreign++
				}
				continue
			}
			if tt == html.SelfClosingTagToken && p.foreign > 0 {
				// In SVG and MathML "<title/>" or "<style/>" is an
				// empty element, not the start of raw text that would
				// swallow the rest of the page.
				z.NextIsNotRawText()
			}
			if a != 0 {
				p.tag(z, a)
			}
		case html.EndTagToken:
			if a := tagAtom(z.Raw()[2:]); (a == atom.Svg || a == atom.Math) && p.foreign > 0 {
				p.foreign--
			}
		}
	}
}

// parser is the state of one HTML call.
type parser struct {
	dst    []Link
	start  int // len(dst) when HTML was called
	max    int
	assets bool
	agent  []byte
	page   Page

	pageURL *url.URL // the page's own URL: the fallback base
	base    *url.URL
	baseSet bool // a <base href> was seen (only the first counts)
	// pending are the links kept before the first <base href>: per the
	// HTML spec a base element anywhere applies to the whole document, so
	// they are resolved again against it if one comes.
	pending []pending
	foreign int // depth of <svg> and <math> elements
	scratch []byte
}

type pending struct {
	i   int // index in dst
	ref *url.URL
}

// tagAtom returns the atom of the tag name at the start of b (a token's raw
// text after "<" or "</"), lower-casing it without allocating, or 0 for a
// name that is no atom. Reading the name from the raw token spares the
// copy that Tokenizer.TagName makes for every tag.
func tagAtom(b []byte) atom.Atom {
	var buf [16]byte
	n := 0
	for _, c := range b {
		if c == ' ' || c == '\n' || c == '\r' || c == '\t' || c == '\f' || c == '/' || c == '>' {
			break
		}
		if n == len(buf) {
			return 0
		}
		if 'A' <= c && c <= 'Z' {
			c += 'a' - 'A'
		}
		buf[n] = c
		n++
	}
	return atom.Lookup(buf[:n])
}

// tag handles the start tag a, whose attributes z has yet to return.
func (p *parser) tag(z *html.Tokenizer, a atom.Atom) {
	switch a {
	case atom.A, atom.Area, atom.Link, atom.Base, atom.Meta,
		atom.Iframe, atom.Frame:
	case atom.Img, atom.Script, atom.Source, atom.Video, atom.Audio,
		atom.Track, atom.Embed, atom.Object:
		if !p.assets {
			return
		}
	default:
		return
	}
	var href, src, srcset, rel, name, content, equiv, poster, data, xlink []byte
	for more := true; more; {
		var k, v []byte
		k, v, more = z.TagAttr()
		switch string(k) {
		case "href":
			href = v
		case "src":
			src = v
		case "srcset":
			srcset = v
		case "rel":
			rel = v
		case "name":
			name = v
		case "content":
			content = v
		case "http-equiv":
			equiv = v
		case "poster":
			poster = v
		case "data":
			data = v
		case "xlink:href":
			xlink = v
		}
	}
	switch a {
	case atom.A, atom.Area:
		if href == nil && p.foreign > 0 {
			href = xlink
		}
		if href != nil {
			p.add(href, Anchor, relNoFollow(rel))
		}
	case atom.Iframe, atom.Frame:
		if src != nil {
			p.add(src, Frame, false)
		}
	case atom.Link:
		if href == nil {
			return
		}
		switch k := linkKind(rel); {
		case k == 0:
		case k == Asset && !p.assets:
		default:
			p.add(href, k, relNoFollow(rel))
		}
	case atom.Base:
		if href != nil && !p.baseSet {
			p.setBase(href)
		}
	case atom.Meta:
		p.meta(name, content, equiv)
	default: // assets
		if src != nil {
			p.add(src, Asset, false)
		}
		if srcset != nil {
			p.srcset(srcset)
		}
		if poster != nil && a == atom.Video {
			p.add(poster, Asset, false)
		}
		if data != nil && a == atom.Object {
			p.add(data, Asset, false)
		}
	}
}

// add resolves the attribute value v and appends it as a link of kind k.
func (p *parser) add(v []byte, k Kind, nofollow bool) {
	if len(p.dst)-p.start >= p.max {
		p.page.Truncated = true
		return
	}
	ref, ok := p.parseRef(v)
	if ref == nil {
		if !ok {
			p.page.Bad++
		}
		return
	}
	s, ok := resolve(p.base, ref)
	if !ok {
		p.page.Bad++
		return
	}
	if !p.baseSet {
		p.pending = append(p.pending, pending{len(p.dst), ref})
	}
	p.dst = append(p.dst, Link{URL: s, Kind: k, NoFollow: nofollow})
}

// parseRef parses the URL reference in an attribute value as a browser
// does (WHATWG URL §4.4, the parts that matter here): leading and trailing
// C0 controls and spaces are trimmed, tabs and newlines inside removed, and
// for http(s) and relative references a backslash before the query is a
// slash. It returns nil, true for a reference to drop without counting it
// (another scheme; a same-document reference, RFC 3986 §4.4) and nil, false
// for one that does not parse.
func (p *parser) parseRef(v []byte) (*url.URL, bool) {
	i, j := 0, len(v)
	for i < j && v[i] <= ' ' {
		i++
	}
	for j > i && v[j-1] <= ' ' {
		j--
	}
	v = v[i:j]
	if len(v) == 0 || v[0] == '#' {
		return nil, true
	}
	if bytes.ContainsAny(v, "\t\n\r\\") {
		b := p.scratch[:0]
		inPath := !hasOtherScheme(v)
		for _, c := range v {
			switch c {
			case '\t', '\n', '\r':
				continue
			case '?', '#':
				inPath = false
			case '\\':
				if inPath {
					c = '/'
				}
			}
			b = append(b, c)
		}
		p.scratch = b
		v = b
		if len(v) == 0 || v[0] == '#' {
			return nil, true
		}
	}
	ref, err := url.Parse(string(v))
	if err != nil {
		return nil, false
	}
	if ref.Scheme != "" && ref.Scheme != "http" && ref.Scheme != "https" {
		return nil, true
	}
	return ref, true
}

// hasOtherScheme reports whether v starts with a scheme other than http or
// https (RFC 3986 §3.1).
func hasOtherScheme(v []byte) bool {
	for i, c := range v {
		switch {
		case 'a' <= c && c <= 'z', 'A' <= c && c <= 'Z':
		case i > 0 && ('0' <= c && c <= '9' || c == '+' || c == '-' || c == '.'):
		case c == ':' && i > 0:
			s := v[:i]
			return !bytes.EqualFold(s, []byte("http")) && !bytes.EqualFold(s, []byte("https"))
		default:
			return false
		}
	}
	return false
}

// resolve resolves ref against base and formats the result without its
// fragment. It reports false for a result with no host or an opaque part
// ("http:x"), which no request can fetch.
func resolve(base, ref *url.URL) (string, bool) {
	u := base.ResolveReference(ref)
	if u.Host == "" || u.Opaque != "" || (u.Scheme != "http" && u.Scheme != "https") {
		return "", false
	}
	u.Fragment, u.RawFragment = "", ""
	u.RawQuery = escapeQuery(u.RawQuery)
	return u.String(), true
}

// escapeQuery percent-encodes the bytes of a query that a browser encodes
// (WHATWG URL's special-query percent-encode set: controls, space, '"',
// '#', '\”, '<', '>' and non-ASCII) and that would not survive a request
// line.
func escapeQuery(q string) string {
	n := 0
	for i := 0; i < len(q); i++ {
		if queryEscaped(q[i]) {
			n++
		}
	}
	if n == 0 {
		return q
	}
	const hex = "0123456789ABCDEF"
	b := make([]byte, 0, len(q)+2*n)
	for i := 0; i < len(q); i++ {
		c := q[i]
		if queryEscaped(c) {
			b = append(b, '%', hex[c>>4], hex[c&15])
		} else {
			b = append(b, c)
		}
	}
	return string(b)
}

func queryEscaped(c byte) bool {
	return c <= ' ' || c >= 0x7f || c == '"' || c == '#' || c == '\'' || c == '<' || c == '>'
}

// withoutFragment formats u without its fragment.
func withoutFragment(u *url.URL) string {
	if u.Fragment == "" && u.RawFragment == "" {
		return u.String()
	}
	v := *u
	v.Fragment, v.RawFragment = "", ""
	return v.String()
}

// setBase handles the first <base href> (HTML §4.2.3): it is resolved
// against the page URL; one that does not parse or is not http(s) leaves
// the page URL as the base. Links kept before it are resolved again.
func (p *parser) setBase(href []byte) {
	p.baseSet = true
	pend := p.pending
	p.pending = nil
	ref, _ := p.parseRef(href)
	if ref == nil || p.pageURL == nil {
		return
	}
	b := p.pageURL.ResolveReference(ref)
	if b.Host == "" || b.Opaque != "" || (b.Scheme != "http" && b.Scheme != "https") {
		return
	}
	p.base = b
	for _, q := range pend {
		// A reference that resolved against the page URL resolves
		// against any http(s) base with a host.
		if s, ok := resolve(b, q.ref); ok {
			p.dst[q.i].URL = s
		}
	}
}

// srcset adds the URLs of the image candidates in a srcset attribute
// (HTML §4.8.4.3.10 "parse a srcset attribute"): comma-separated, each a
// URL and optional descriptors ("a.jpg 1x, b.jpg 2x"; "c.jpg 640w").
func (p *parser) srcset(v []byte) {
	isSpace := func(c byte) bool { return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\f' }
	i := 0
	for i < len(v) {
		for i < len(v) && (isSpace(v[i]) || v[i] == ',') {
			i++
		}
		if i == len(v) {
			return
		}
		start := i
		for i < len(v) && !isSpace(v[i]) {
			i++
		}
		u := v[start:i]
		if end := len(bytes.TrimRight(u, ",")); end < len(u) {
			// "a.jpg," : the candidate ends with its URL.
			u = u[:end]
		} else {
			// Skip the descriptors, to a comma outside parentheses.
			depth := 0
		desc:
			for ; i < len(v); i++ {
				switch v[i] {
				case '(':
					depth++
				case ')':
					if depth > 0 {
						depth--
					}
				case ',':
					if depth == 0 {
						i++
						break desc
					}
				}
			}
		}
		if len(u) > 0 {
			p.add(u, Asset, false)
		}
	}
}

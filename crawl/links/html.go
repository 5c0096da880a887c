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
// HTML returns r's read error, other than io.EOF, wrapped, with the links
// found before it. It is safe to call concurrently: each call has its own
// state.
func HTML(dst []Link, r io.Reader, base *url.URL, agent string, opts Options) ([]Link, Page, error) {
	p := parser{
		dst:     dst,
		start:   len(dst),
		max:     opts.MaxLinks,
		assets:  opts.Assets,
		pageURL: base,
		agent:   productToken(agent),
	}
	if p.max <= 0 {
		p.max = DefaultMaxLinks
	}
	if base == nil {
		base = &url.URL{}
	}
	p.base = newBase(base)
	z := html.NewTokenizer(r)
	for {
		tt := z.Next()
		switch tt {
		case html.ErrorToken:
			p.page.Base = p.base.String()
			if err := z.Err(); err != io.EOF {
				// The page's host and path, not its query, which may
				// hold secrets that do not belong in logs.
				return p.dst, p.page, fmt.Errorf("links: reading HTML of %s: %w", (&url.URL{Scheme: base.Scheme, Host: base.Host, Path: base.Path}).String(), err)
			}
			return p.dst, p.page, nil
		case html.StartTagToken, html.SelfClosingTagToken:
			a := tagAtom(z.Raw()[1:])
			switch a {
			case atom.Noscript:
				// We are a user agent without scripting, for which
				// <noscript> holds markup, not text (HTML §4.12.2):
				// its links are what such a client is offered.
				// "<noscript/>" starts the element too: HTML ignores
				// the slash on elements that are not void.
				z.NextIsNotRawText()
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
	agent  string
	page   Page

	pageURL *url.URL // the page's own URL: the fallback base
	base    baseURL
	baseSet bool // a <base href> was seen (only the first counts)
	// pending are the links kept before the first <base href>, with their
	// references in arena: per the HTML spec a base element anywhere
	// applies to the whole document, so they are resolved again against
	// it if one comes.
	pending []pending
	arena   []byte
	foreign int // depth of <svg> and <math> elements
	scratch []byte
	out     []byte
	amp     []byte // the values of one tag with "&amp;" replaced
}

type pending struct {
	i        int // index in dst
	from, to int // the reference is arena[from:to]
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

// The attributes tag reads.
const (
	attrHref = iota
	attrSrc
	attrSrcset
	attrRel
	attrName
	attrContent
	attrEquiv
	attrPoster
	attrData
	attrXlink
	numAttrs
)

var attrNames = [numAttrs]string{"href", "src", "srcset", "rel", "name", "content", "http-equiv", "poster", "data", "xlink:href"}

// attrs holds the values of the attributes of interest of one tag; has
// says which are present (an empty value is present).
type attrs struct {
	val [numAttrs][]byte
	has [numAttrs]bool
	// amp, when set, is where set writes a value's "&amp;" as "&"
	// (plainAttrs allows no other reference).
	amp *[]byte
}

// set records the attribute k=v unless one of that name came first (the
// tokenizer's rule for duplicates).
func (a *attrs) set(k, v []byte) {
	for i, name := range attrNames {
		if len(k) == len(name) && equalFold(k, name) {
			if !a.has[i] {
				if a.amp != nil && bytes.IndexByte(v, '&') >= 0 {
					start := len(*a.amp)
					for {
						j := bytes.Index(v, []byte("&amp;"))
						if j < 0 {
							break
						}
						*a.amp = append(append(*a.amp, v[:j]...), '&')
						v = v[j+len("&amp;"):]
					}
					*a.amp = append(*a.amp, v...)
					v = (*a.amp)[start:]
				}
				a.val[i], a.has[i] = v, true
			}
			return
		}
	}
}

// plainAttrs reports whether the raw start tag needs none of what TagAttr
// does to values but replacing "&amp;" with "&": no other character
// reference, no NUL, no CR.
func plainAttrs(raw []byte) bool {
	if bytes.IndexByte(raw, 0) >= 0 || bytes.IndexByte(raw, '\r') >= 0 {
		return false
	}
	for i := bytes.IndexByte(raw, '&'); i >= 0; {
		if !bytes.HasPrefix(raw[i:], []byte("&amp;")) {
			return false
		}
		j := bytes.IndexByte(raw[i+1:], '&')
		if j < 0 {
			break
		}
		i += 1 + j
	}
	return true
}

// get returns the value of attribute i, or nil.
func (a *attrs) get(i int) ([]byte, bool) { return a.val[i], a.has[i] }

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
	var at attrs
	if raw := z.Raw(); plainAttrs(raw) {
		// Nothing to unescape or convert but "&amp;" (common in
		// query strings): read the values in place, sparing the
		// copies TagAttr makes of every key and value.
		p.amp = p.amp[:0]
		at.amp = &p.amp
		rawAttrs(raw, at.set)
	} else {
		for more := true; more; {
			var k, v []byte
			k, v, more = z.TagAttr()
			at.set(k, v)
		}
	}
	rel, _ := at.get(attrRel)
	switch a {
	case atom.A, atom.Area:
		href, ok := at.get(attrHref)
		if !ok && p.foreign > 0 {
			href, ok = at.get(attrXlink)
		}
		if ok {
			p.add(href, Anchor, relNoFollow(rel))
		}
	case atom.Iframe, atom.Frame:
		if src, ok := at.get(attrSrc); ok {
			p.add(src, Frame, false)
		}
	case atom.Link:
		href, ok := at.get(attrHref)
		if !ok {
			return
		}
		switch k := linkKind(rel); {
		case k == 0:
		case k == Asset && !p.assets:
		default:
			p.add(href, k, relNoFollow(rel))
		}
	case atom.Base:
		if href, ok := at.get(attrHref); ok && !p.baseSet {
			p.setBase(href)
		}
	case atom.Meta:
		name, _ := at.get(attrName)
		content, _ := at.get(attrContent)
		equiv, _ := at.get(attrEquiv)
		p.meta(name, content, equiv)
	default: // assets
		if src, ok := at.get(attrSrc); ok {
			p.add(src, Asset, false)
		}
		if srcset, ok := at.get(attrSrcset); ok {
			p.srcset(srcset)
		}
		if poster, ok := at.get(attrPoster); ok && a == atom.Video {
			p.add(poster, Asset, false)
		}
		if data, ok := at.get(attrData); ok && a == atom.Object {
			p.add(data, Asset, false)
		}
	}
}

// rawAttrs calls fn for each attribute with a non-empty name of the start
// tag whose raw text is raw, as Tokenizer.readTag reads them (WHATWG
// §13.2.5.32-39, down to its quirks: "<a/href=x>" has an href, "<a =x>"
// an attribute named "=x"). Names are not lower-cased and values are not
// unescaped: the caller makes sure there is nothing to unescape.
func rawAttrs(raw []byte, fn func(k, v []byte)) {
	isSpace := func(c byte) bool { return c == ' ' || c == '\n' || c == '\r' || c == '\t' || c == '\f' }
	i, n := 1, len(raw)
	for i < n && !isSpace(raw[i]) && raw[i] != '/' && raw[i] != '>' {
		i++
	}
	skip := func() {
		for i < n && isSpace(raw[i]) {
			i++
		}
	}
	skip()
	for i < n && raw[i] != '>' {
		// The attribute name (§13.2.5.33): an '=' first is part of it.
		ks := i
		for i < n {
			c := raw[i]
			if c == '=' && i > ks || isSpace(c) || c == '/' || c == '>' {
				break
			}
			i++
		}
		if i == ks && raw[i] == '/' {
			// A stray '/' between attributes is no attribute.
			i++
			skip()
			continue
		}
		k := raw[ks:i]
		var v []byte
		skip()
		if i < n && raw[i] == '=' {
			i++
			skip()
			switch {
			case i == n || raw[i] == '>':
			case raw[i] == '"' || raw[i] == '\'':
				q := raw[i]
				i++
				vs := i
				for i < n && raw[i] != q {
					i++
				}
				v = raw[vs:i]
				if i < n {
					i++
				}
			default:
				vs := i
				for i < n && !isSpace(raw[i]) && raw[i] != '>' {
					i++
				}
				v = raw[vs:i]
			}
		}
		if len(k) > 0 {
			fn(k, v)
		}
		skip()
	}
}

// add resolves the attribute value v and appends it as a link of kind k.
func (p *parser) add(v []byte, k Kind, nofollow bool) {
	if len(p.dst)-p.start >= p.max {
		p.page.Truncated = true
		return
	}
	ref, drop := p.clean(v)
	if drop {
		return
	}
	s, st := p.base.resolve(ref, &p.out)
	switch st {
	case dropped:
		return
	case bad:
		p.page.Bad++
		return
	}
	if !p.baseSet {
		from := len(p.arena)
		p.arena = append(p.arena, ref...)
		p.pending = append(p.pending, pending{len(p.dst), from, len(p.arena)})
	}
	p.dst = append(p.dst, Link{URL: s, Kind: k, NoFollow: nofollow})
}

// clean returns the URL reference in an attribute value as a browser reads
// it (WHATWG URL §4.4, the parts that matter here): leading and trailing
// C0 controls and spaces trimmed, tabs and newlines inside removed, and in
// http(s) and relative references a backslash before the query read as a
// slash. It reports drop for a same-document reference (RFC 3986 §4.4:
// empty or only a fragment), which names the page itself.
func (p *parser) clean(v []byte) (ref []byte, drop bool) {
	i, j := 0, len(v)
	for i < j && v[i] <= ' ' {
		i++
	}
	for j > i && v[j-1] <= ' ' {
		j--
	}
	v = v[i:j]
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
	}
	return v, len(v) == 0 || v[0] == '#'
}

// setBase handles the first <base href> (HTML §4.2.3): it is resolved
// against the page URL; one that does not parse or is not http(s) leaves
// the page URL as the base. Links kept before it are resolved again.
func (p *parser) setBase(href []byte) {
	p.baseSet = true
	pend, arena := p.pending, p.arena
	p.pending, p.arena = nil, nil
	ref, _ := p.clean(href)
	if i := bytes.IndexByte(ref, '#'); i >= 0 {
		ref = ref[:i]
	}
	r, err := url.Parse(string(ref))
	if err != nil || p.pageURL == nil {
		return
	}
	u := p.pageURL.ResolveReference(r)
	if !fetchable(u) {
		return
	}
	u.Fragment, u.RawFragment = "", ""
	u.RawQuery = escapeQuery(u.RawQuery)
	if _, err := url.Parse(u.String()); err != nil {
		return
	}
	p.base = newBase(u)
	for _, q := range pend {
		// A reference that resolved against the page URL resolves
		// against any fetchable base; should it not, the link keeps
		// its first resolution.
		if s, st := p.base.resolve(arena[q.from:q.to], &p.out); st == resolved {
			p.dst[q.i].URL = s
		}
	}
}

// srcset adds the URLs of the image candidates in a srcset attribute
// (HTML's "parse a srcset attribute"): comma-separated, each a
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

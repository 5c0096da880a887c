package links

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"net/url"
	"slices"
	"strings"
	"testing"
	"testing/iotest"

	"golang.org/x/net/html"
)

const pageURL = "https://example.com/dir/page.html?x=1#frag"

// show formats links compactly: "anchor https://example.com/a", with
// " nofollow" when it is set.
func show(ls []Link) []string {
	var out []string
	for _, l := range ls {
		s := l.Kind.String() + " " + l.URL
		if l.NoFollow {
			s += " nofollow"
		}
		out = append(out, s)
	}
	return out
}

func mustParse(t testing.TB, s string) *url.URL {
	t.Helper()
	u, err := url.Parse(s)
	if err != nil {
		t.Fatal(err)
	}
	return u
}

func TestHTMLLinks(t *testing.T) {
	for _, tc := range []struct {
		name   string
		html   string
		assets bool
		want   []string
		bad    int
		base   string // Page.Base; pageURL without fragment if empty
	}{
		{name: "relative", html: `<a href="a">x</a><a href="../up">x</a><a href="./b/../c">x</a><a href="/root">x</a>`,
			want: []string{"anchor https://example.com/dir/a", "anchor https://example.com/up", "anchor https://example.com/dir/c", "anchor https://example.com/root"}},
		{name: "too many dot-dots", html: `<a href="../../../../x">`, want: []string{"anchor https://example.com/x"}},
		{name: "protocol-relative", html: `<a href="//other.example/x?y#z">`, want: []string{"anchor https://other.example/x?y"}},
		{name: "query only", html: `<a href="?q=2">`, want: []string{"anchor https://example.com/dir/page.html?q=2"}},
		{name: "fragment only is the page itself", html: `<a href="#top">x</a><a href="">y</a><a href=" # ">z</a>`},
		{name: "fragment removed", html: `<a href="other.html#sec">`, want: []string{"anchor https://example.com/dir/other.html"}},
		{name: "bad escape in fragment", html: `<a href="a b#%zz">`, want: []string{"anchor https://example.com/dir/a%20b"}},
		{name: "absolute", html: `<a href="http://a.example:8080/p?q">`, want: []string{"anchor http://a.example:8080/p?q"}},
		{name: "scheme case", html: `<a href="HTTPS://A.Example/P">`, want: []string{"anchor https://A.Example/P"}},
		{name: "&amp; only", html: `<a href="/s?a=1&amp;b=2&amp;amp;c=&amp;">x</a><a title="&amp;" HREF=/t?x&amp;y rel="nofollow">`, want: []string{"anchor https://example.com/s?a=1&b=2&amp;c=&", "anchor https://example.com/t?x&y nofollow"}},
		{name: "entities (a legacy one before = in an attribute is text)", html: `<a href="/s?a=1&amp;b=2&lt=3&copy;">`, want: []string{"anchor https://example.com/s?a=1&b=2&lt=3%C2%A9"}},
		{name: "uppercase tags and attributes", html: `<A HREF="/up">x</A><IFRAME SRC="/f"></IFRAME><Link REL="Next" HREF="/n">`,
			want: []string{"anchor https://example.com/up", "frame https://example.com/f", "related https://example.com/n"}},
		{name: "a without href", html: `<a name="x">x</a><a>y</a><a href>z</a>`, want: nil},
		{name: "unquoted and single-quoted", html: `<a href=/u>x</a><a href='/s'>`, want: []string{"anchor https://example.com/u", "anchor https://example.com/s"}},
		{name: "whitespace trimmed", html: "<a href=\"\n\t /t \r\n\">x</a><a href=\"/a\nb\">y</a>", want: []string{"anchor https://example.com/t", "anchor https://example.com/ab"}},
		{name: "backslashes", html: `<a href="\\evil.example\x">x</a><a href="/p\q?r\s">y</a>`, want: []string{"anchor https://evil.example/x", "anchor https://example.com/p/q?r\\s"}},
		{name: "other schemes dropped silently", html: `<a href="javascript:void(0)">a</a><a href="mailto:a@b">b</a><a href="data:text/html,x">c</a><a href="tel:+1">d</a><a href="ftp://x/">e</a><a href=" JavaScript:x">f</a>`},
		{name: "unparsable counted", html: `<a href="http://exa mple.com/">a</a><a href="http://[::1/">b</a><a href="http:no-host">c</a><a href="http:///x">d</a><a href="//">e</a><a href="///x">f</a><a href="http://a<b/">g</a><a href="//%22q%22/">h</a><a href="/ok">`,
			want: []string{"anchor https://example.com/ok"}, bad: 8},
		{name: "spaces and non-ASCII escaped", html: `<a href="/a b/ツ?q=a b&r=ツ">`, want: []string{"anchor https://example.com/a%20b/%E3%83%84?q=a%20b&r=%E3%83%84"}},
		{name: "rel nofollow", html: `<a href="/1" rel="NoFollow">x</a><a href="/2" rel="external sponsored">x</a><a href="/3" rel="UGC">x</a><a href="/4" rel="noopener">x</a><area href="/5" rel=nofollow>`,
			want: []string{"anchor https://example.com/1 nofollow", "anchor https://example.com/2 nofollow", "anchor https://example.com/3 nofollow", "anchor https://example.com/4", "anchor https://example.com/5 nofollow"}},
		{name: "link rels", html: `<link rel="canonical" href="/c"><link rel="alternate" hreflang=de href="/de"><link rel="STYLESHEET" href="/s.css"><link rel="shortcut icon" href="/i.ico"><link rel="dns-prefetch" href="//cdn.example"><link rel=preconnect href="https://cdn.example"><link href="/norel">`,
			want: []string{"related https://example.com/c", "related https://example.com/de", "related https://example.com/norel"}},
		{name: "link rels with assets", assets: true, html: `<link rel="canonical" href="/c"><link rel="alternate stylesheet" href="/s.css"><link rel="preload" as="font" href="/f.woff2"><link rel="dns-prefetch" href="//cdn.example">`,
			want: []string{"related https://example.com/c", "asset https://example.com/s.css", "asset https://example.com/f.woff2"}},
		{name: "assets off", html: `<img src="/i.png" srcset="/a.png 2x"><script src="/s.js"></script><video src="/v.mp4"></video>`},
		{name: "assets", assets: true, html: `<img src="/i.png"><script src="/s.js"></script><video src="/v.mp4" poster="/p.jpg"><source src="/v.webm"><track src="/t.vtt"></video><audio src="/a.mp3"></audio><embed src="/e.swf"><object data="/o.pdf"></object>`,
			want: []string{"asset https://example.com/i.png", "asset https://example.com/s.js", "asset https://example.com/v.mp4", "asset https://example.com/p.jpg", "asset https://example.com/v.webm", "asset https://example.com/t.vtt", "asset https://example.com/a.mp3", "asset https://example.com/e.swf", "asset https://example.com/o.pdf"}},
		{name: "srcset", assets: true, html: `<img srcset="a.jpg 1x, /b.jpg 2x,c.jpg,, d,1.jpg 640w , e.jpg (x, y) 3x, f.jpg,">`,
			want: []string{"asset https://example.com/dir/a.jpg", "asset https://example.com/b.jpg", "asset https://example.com/dir/c.jpg", "asset https://example.com/dir/d,1.jpg", "asset https://example.com/dir/e.jpg", "asset https://example.com/dir/f.jpg"}},
		{name: "picture source srcset", assets: true, html: "<picture><source srcset=\"/w.webp 1x,\n/w2.webp 2x\" type=image/webp><img src=/i.jpg></picture>",
			want: []string{"asset https://example.com/w.webp", "asset https://example.com/w2.webp", "asset https://example.com/i.jpg"}},
		{name: "frames", html: `<frameset><frame src="/f1"><frame src="f2"></frameset><iframe src="https://x.example/e">fallback <a href="/not">no</a></iframe>`,
			want: []string{"frame https://example.com/f1", "frame https://example.com/dir/f2", "frame https://x.example/e"}},
		{name: "script style comment title textarea", html: `<script>var a = '<a href="/s1">';</script><style>a{background:url(/s2.png)}</style><!-- <a href="/c"> --><title><a href="/t"></title><textarea><a href="/ta"></textarea><a href="/real">`,
			want: []string{"anchor https://example.com/real"}},
		{name: "script with src", assets: true, html: `<script src="/s.js"><a href="/inside"></script><a href="/after">`,
			want: []string{"asset https://example.com/s.js", "anchor https://example.com/after"}},
		{name: "noscript is markup", html: `<head><noscript><a href="/ns1"></noscript></head><body><noscript><img src="/px.gif"><a href="/ns2">x</a></noscript><a href="/after">`,
			want: []string{"anchor https://example.com/ns1", "anchor https://example.com/ns2", "anchor https://example.com/after"}},
		{name: "self-closing noscript is markup too", html: `<noscript/><a href="/ns">`, want: []string{"anchor https://example.com/ns"}},
		{name: "svg", html: `<svg><title/><a xlink:href="/x1"><text>t</text></a><style/></svg><a href="/after">`,
			want: []string{"anchor https://example.com/x1", "anchor https://example.com/after"}},
		{name: "duplicates kept", html: `<a href="/d">1</a><a href="/d">2</a>`, want: []string{"anchor https://example.com/d", "anchor https://example.com/d"}},
		{name: "duplicate attribute: first wins", html: `<a href="/first" href="/second">`, want: []string{"anchor https://example.com/first"}},
		{name: "base", html: `<head><base href="/b/"></head><a href="x">`, want: []string{"anchor https://example.com/b/x"}, base: "https://example.com/b/"},
		{name: "base relative to the page", html: `<base href="sub/"><a href="x">`, want: []string{"anchor https://example.com/dir/sub/x"}, base: "https://example.com/dir/sub/"},
		{name: "second base ignored", html: `<base href="https://one.example/"><base href="https://two.example/"><a href="x">`,
			want: []string{"anchor https://one.example/x"}, base: "https://one.example/"},
		{name: "base without href does not count", html: `<base target="_blank"><base href="https://two.example/"><a href="x">`,
			want: []string{"anchor https://two.example/x"}, base: "https://two.example/"},
		{name: "base in body applies to the whole document", html: `<a href="before">x</a><a href="https://abs.example/">y</a><p><base href="https://b.example/d/"><a href="after">`,
			want: []string{"anchor https://b.example/d/before", "anchor https://abs.example/", "anchor https://b.example/d/after"}, base: "https://b.example/d/"},
		{name: "base with fragment", html: `<base href="/b/#%f"><a href="x">`, want: []string{"anchor https://example.com/b/x"}, base: "https://example.com/b/"},
		{name: "base not http is ignored", html: `<base href="javascript:x"><base href="https://late.example/"><a href="x">`, want: []string{"anchor https://example.com/dir/x"}},
		{name: "base that does not parse", html: `<base href="http://[bad"><a href="x">`, want: []string{"anchor https://example.com/dir/x"}},
		{name: "binary junk", html: "\x00\x01\xff\xfe<\x00a href=/x>\x89PNG\r\n\x1a\n<a href=\"/ok\x00\">",
			want: []string{"anchor https://example.com/ok%EF%BF%BD"}},
		{name: "unterminated tag at end", html: `<a href="/ok">x</a><a href="/cut`, want: []string{"anchor https://example.com/ok"}},
		{name: "plaintext swallows the rest", html: `<a href="/ok"><plaintext><a href="/no">`, want: []string{"anchor https://example.com/ok"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, page, err := HTML(nil, strings.NewReader(tc.html), mustParse(t, pageURL), "polite", Options{Assets: tc.assets})
			if err != nil {
				t.Fatalf("HTML(%.200q) error %v", tc.html, err)
			}
			if !slices.Equal(show(got), tc.want) {
				t.Errorf("HTML(%.200q) =\n\t%q\nwant\n\t%q", tc.html, show(got), tc.want)
			}
			if page.Bad != tc.bad {
				t.Errorf("HTML(%.200q): Bad = %d, want %d", tc.html, page.Bad, tc.bad)
			}
			base := tc.base
			if base == "" {
				base = "https://example.com/dir/page.html?x=1"
			}
			if page.Base != base {
				t.Errorf("HTML(%.200q): Base = %q, want %q", tc.html, page.Base, base)
			}
		})
	}
}

func TestHTMLMetaRobots(t *testing.T) {
	for _, tc := range []struct {
		html              string
		nofollow, noindex bool
	}{
		{`<meta name="robots" content="noindex, nofollow">`, true, true},
		{`<META NAME="ROBOTS" CONTENT="NONE">`, true, true},
		{`<meta name="robots" content="nofollow">`, true, false},
		{`<meta name="robots" content="noindex,follow">`, false, true},
		{`<meta name="robots" content="index, follow, max-snippet:-1">`, false, false},
		{`<meta name=" Robots " content=" noindex ">`, false, true},
		{`<meta name="polite" content="nofollow">`, true, false},
		{`<meta name="POLITE" content="none">`, true, true},
		{`<meta name="googlebot" content="nofollow">`, false, false},
		{`<meta content="nofollow">`, false, false},
		{`<meta property="robots" content="nofollow">`, false, false},
		{`<body><p>late <meta name="robots" content="nofollow"></p></body>`, true, false},
		{`<meta name="robots" content="noindex"><meta name="robots" content="nofollow">`, true, true},
		{`<!-- <meta name="robots" content="nofollow"> -->`, false, false},
	} {
		_, page, err := HTML(nil, strings.NewReader(tc.html), mustParse(t, pageURL), "polite/1.0", Options{})
		if err != nil || page.NoFollow != tc.nofollow || page.NoIndex != tc.noindex {
			t.Errorf("HTML(%.200q) = NoFollow %v, NoIndex %v, %v; want %v, %v", tc.html, page.NoFollow, page.NoIndex, err, tc.nofollow, tc.noindex)
		}
	}
}

func TestHTMLRefresh(t *testing.T) {
	for _, tc := range []struct{ html, want string }{
		{`<meta http-equiv="refresh" content="0; url=/next">`, "https://example.com/next"},
		{`<meta http-equiv="Refresh" content="5;URL='other.html#x'">`, "https://example.com/dir/other.html"},
		{`<meta http-equiv="refresh" content="3, https://x.example/ ">`, "https://x.example/"},
		{`<meta http-equiv="refresh" content="0 ; url = &quot;/q&quot; ">`, "https://example.com/q"},
		{`<meta http-equiv="refresh" content="30">`, ""},
		{`<meta http-equiv="refresh" content="url=/x">`, ""},
		{`<meta http-equiv="refresh" content="0; url=javascript:x">`, ""},
		{`<meta http-equiv="refresh" content="0; url=/first"><meta http-equiv="refresh" content="0; url=/second">`, "https://example.com/first"},
	} {
		got, page, err := HTML(nil, strings.NewReader(tc.html), mustParse(t, pageURL), "polite", Options{})
		if err != nil || page.Refresh != tc.want || len(got) != 0 {
			t.Errorf("HTML(%.200q) = Refresh %q, %d links, %v; want %q", tc.html, page.Refresh, len(got), err, tc.want)
		}
	}
}

func TestHTMLMaxLinks(t *testing.T) {
	page := strings.Repeat(`<a href="/x">`, 10) + `<meta name=robots content=nofollow>`
	dst := []Link{{URL: "https://kept.example/", Kind: Anchor}}
	for _, tc := range []struct {
		max, want int
		truncated bool
	}{{3, 3, true}, {10, 10, false}, {11, 10, false}, {0, 10, false}} {
		got, p, err := HTML(dst[:1:1], strings.NewReader(page), mustParse(t, pageURL), "", Options{MaxLinks: tc.max})
		if err != nil || len(got)-1 != tc.want || p.Truncated != tc.truncated || !p.NoFollow || got[0] != dst[0] {
			t.Errorf("HTML(MaxLinks %d) = %d links after dst, Truncated %v, NoFollow %v, %v; want %d, %v, true",
				tc.max, len(got)-1, p.Truncated, p.NoFollow, err, tc.want, tc.truncated)
		}
	}
}

func TestHTMLReadError(t *testing.T) {
	boom := errors.New("boom")
	r := io.MultiReader(strings.NewReader(`<a href="/one">x</a><a href="/two">`), iotest.ErrReader(boom))
	got, _, err := HTML(nil, r, mustParse(t, pageURL), "", Options{})
	if !errors.Is(err, boom) || err.Error() != "links: reading HTML of https://example.com/dir/page.html: boom" {
		t.Errorf("HTML(failing reader) error = %v, want one wrapping %v", err, boom)
	}
	if want := []string{"anchor https://example.com/one", "anchor https://example.com/two"}; !slices.Equal(show(got), want) {
		t.Errorf("HTML(failing reader) = %q, want %q", show(got), want)
	}
}

// TestHTMLStreaming checks that the result does not depend on how r splits
// the page.
func TestHTMLStreaming(t *testing.T) {
	page := benchPage()
	want, wantPage, err := HTML(nil, strings.NewReader(page), mustParse(t, pageURL), "polite", Options{Assets: true})
	if err != nil {
		t.Fatal(err)
	}
	got, gotPage, err := HTML(nil, iotest.OneByteReader(strings.NewReader(page)), mustParse(t, pageURL), "polite", Options{Assets: true})
	if err != nil || !slices.Equal(got, want) || gotPage != wantPage {
		t.Errorf("HTML(one byte at a time) = %d links %+v %v; want %d links %+v", len(got), gotPage, err, len(want), wantPage)
	}
}

func TestKindString(t *testing.T) {
	for k, want := range map[Kind]string{Anchor: "anchor", Frame: "frame", Related: "related", Asset: "asset", 0: "Kind(0)", 9: "Kind(9)"} {
		if got := k.String(); got != want {
			t.Errorf("Kind(%d).String() = %q, want %q", uint8(k), got, want)
		}
	}
}

// checkLinks checks the properties every result of HTML has.
func checkLinks(t *testing.T, data []byte, got []Link, page Page, opts Options) {
	t.Helper()
	max := opts.MaxLinks
	if max <= 0 {
		max = DefaultMaxLinks
	}
	if len(got) > max {
		t.Fatalf("HTML(%.200q) returned %d links, more than MaxLinks %d", data, len(got), max)
	}
	for _, l := range append(got, Link{URL: page.Base, Kind: Anchor}) {
		u, err := url.Parse(l.URL)
		if err != nil {
			t.Fatalf("HTML(%.200q) returned %q, which does not parse: %v", data, l.URL, err)
		}
		if (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" || u.Opaque != "" || u.Fragment != "" || strings.Contains(l.URL, "#") {
			t.Fatalf("HTML(%.200q) returned %q: not an absolute http(s) URL without fragment", data, l.URL)
		}
		if l.Kind < Anchor || l.Kind > Asset || (l.Kind == Asset && !opts.Assets) {
			t.Fatalf("HTML(%.200q) returned %q of kind %v with Assets %v", data, l.URL, l.Kind, opts.Assets)
		}
		if strings.ContainsAny(l.URL, " \t\r\n\"<>") || strings.Contains(l.URL[strings.IndexByte(l.URL+"?", '?'):], "'") {
			t.Fatalf("HTML(%.200q) returned %q, with characters a request line cannot carry", data, l.URL)
		}
	}
}

func FuzzHTML(f *testing.F) {
	// Small seeds only: the fuzzer spends up to a minute minimizing each
	// new input, which for the 30 KB benchmark page leaves no time to
	// fuzz.
	f.Add([]byte(`<html><head><base href="/b/"><meta name=robots content="noindex,NOFOLLOW">
<link rel="alternate stylesheet" href="s.css"><link rel=canonical href="https://example.com/c#x">
<script>var a = '<a href="/no">'</script><style>a{}</style></head>
<body><a href="../x?y=1&amp;z" rel="nofollow ugc">x</a><!-- <a href="/c"> -->
<img src=i.png srcset="a.png 1x, b.png 2x"><iframe src=//f.example/></iframe>
<noscript><a href="/ns">ns</a></noscript><svg><title/><a xlink:href="/svg"/></svg>
<a href="javascript:x">j</a><a href="#top">t</a><a href="http://[::1">bad</a></body></html>`), uint8(0), true)
	f.Add([]byte(`<base href="../b/"><a href="x#y" rel=nofollow><img srcset="a 1x,b 2x">`), uint8(2), true)
	f.Fuzz(func(t *testing.T, data []byte, max uint8, assets bool) {
		opts := Options{Assets: assets, MaxLinks: int(max)}
		got, page, err := HTML(nil, strings.NewReader(string(data)), mustParse(t, pageURL), "polite", opts)
		if err != nil {
			t.Fatalf("HTML(%.200q) error %v from a strings.Reader", data, err)
		}
		checkLinks(t, data, got, page, opts)
		checkRawAttrs(t, data)
		// Streaming: the same result however r splits the bytes.
		got2, page2, err := HTML(nil, iotest.HalfReader(strings.NewReader(string(data))), mustParse(t, pageURL), "polite", opts)
		if err != nil || !slices.Equal(got, got2) || page != page2 {
			t.Fatalf("HTML(%.200q) differs when read in halves:\n%v %+v\n%v %+v", data, got, page, got2, page2)
		}
	})
}

// benchPage returns a realistic page of about 30 KB with about 100 links:
// a head with metadata, styles and scripts, navigation, an article with
// images, and a footer.
func benchPage() string {
	var b strings.Builder
	b.WriteString(`<!DOCTYPE html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<meta name="robots" content="index, follow, max-image-preview:large">
<title>Quarterly report on the state of the widget industry &mdash; Example News</title>
<link rel="canonical" href="https://example.com/news/2026/widgets">
<link rel="alternate" type="application/rss+xml" title="RSS" href="/feed.xml">
<link rel="alternate" hreflang="de" href="https://example.com/de/news/2026/widgets">
<link rel="stylesheet" href="/static/css/main.4f2a9c.css">
<link rel="icon" href="/favicon.ico" sizes="any">
<link rel="preconnect" href="https://cdn.example.net">
<link rel="preload" as="font" href="/static/fonts/inter.woff2" crossorigin>
<style>
body { font-family: Inter, sans-serif; margin: 0; }
.hero { background: url("/static/img/hero.jpg") no-repeat; }
nav a { color: #333; text-decoration: none; padding: 0 .5em; }
</style>
<script async src="https://www.googletagmanager.com/gtag/js?id=G-XXXX"></script>
<script>
window.dataLayer = window.dataLayer || [];
function gtag(){dataLayer.push(arguments);}
gtag('js', new Date()); gtag('config', 'G-XXXX');
var tpl = '<a href="/not-a-link">' + "</div>";
</script>
</head>
<body class="article">
<header><a href="/" class="logo"><img src="/static/img/logo.svg" alt="Example News" width="120" height="40"></a>
<nav><ul>
`)
	for i := range 20 {
		fmt.Fprintf(&b, "<li><a href=\"/section/%d\" class=\"nav-link\" title=\"Section %d\">Section %d</a></li>\n", i, i, i)
	}
	b.WriteString("</ul></nav></header>\n<main><article>\n<h1>Quarterly report on the state of the widget industry</h1>\n")
	para := `Analysts say the market for widgets grew faster than expected this quarter, driven by demand from gadget makers &amp; a weaker dollar. ` +
		`Suppliers in three regions reported longer lead times, while prices for the most common sizes held steady. `
	for i := range 40 {
		fmt.Fprintf(&b, "<p>%s%s<a href=\"https://example.com/news/2026/%d-related-story?utm_source=article&amp;utm_medium=link\">Read more</a>.</p>\n", para, para[:i*3], i)
		if i%8 == 0 {
			fmt.Fprintf(&b, "<figure><img src=\"/media/%d.jpg\" srcset=\"/media/%d-480.jpg 480w, /media/%d-960.jpg 960w\" sizes=\"(max-width: 600px) 480px, 960px\" alt=\"Figure %d\" loading=\"lazy\"><figcaption>Figure %d: widgets.</figcaption></figure>\n", i, i, i, i, i)
		}
		if i%10 == 5 {
			fmt.Fprintf(&b, "<!-- ad slot %d <a href=\"/ads/%d\"> -->\n<div class=\"ad\" data-slot=\"%d\"></div>\n", i, i, i)
		}
	}
	b.WriteString("</article>\n<aside><h2>Most read</h2><ol>\n")
	for i := range 15 {
		fmt.Fprintf(&b, "<li><a href=\"../../news/2026/popular-%d\" rel=\"bookmark\">Popular story number %d about widgets and gadgets</a></li>\n", i, i)
	}
	b.WriteString("</ol></aside></main>\n<footer><p>Follow us:\n")
	for _, s := range []string{"https://twitter.example/examplenews", "https://social.example/@news", "mailto:tips@example.com", "javascript:void(0)", "#top"} {
		fmt.Fprintf(&b, "<a href=\"%s\" rel=\"nofollow noopener\" target=\"_blank\">%s</a>\n", s, s)
	}
	for i := range 20 {
		fmt.Fprintf(&b, "<a href=\"/about/page-%d\">About page %d</a> | \n", i, i)
	}
	b.WriteString(`</p><iframe src="https://video.example/embed/abc123" width="560" height="315"></iframe>
<script src="/static/js/app.91b3e.js" defer></script>
</footer>
</body>
</html>
`)
	return b.String()
}

func BenchmarkHTML(b *testing.B) {
	page := benchPage()
	base := mustParse(b, "https://example.com/news/2026/widgets")
	// The floor: x/net/html's tokenizer alone, which allocates for every
	// attribute of every tag.
	b.Run("tokenizer", func(b *testing.B) {
		var r strings.Reader
		b.ReportAllocs()
		b.SetBytes(int64(len(page)))
		for b.Loop() {
			r.Reset(page)
			z := html.NewTokenizer(&r)
			for z.Next() != html.ErrorToken {
			}
		}
	})
	for _, assets := range []bool{false, true} {
		b.Run(fmt.Sprintf("assets=%v", assets), func(b *testing.B) {
			var dst []Link
			var r strings.Reader
			b.ReportAllocs()
			b.SetBytes(int64(len(page)))
			n := 0
			for b.Loop() {
				r.Reset(page)
				var err error
				dst, _, err = HTML(dst[:0], &r, base, "polite", Options{Assets: assets})
				if err != nil {
					b.Fatal(err)
				}
				n = len(dst)
			}
			b.ReportMetric(float64(n), "links/op")
		})
	}
}

// TestRawAttrs checks rawAttrs against the tokenizer's own reading.
func TestRawAttrs(t *testing.T) {
	for _, tag := range []string{
		`<a href="/x" class=y>`, `<a/href=x>`, `<a href/x=1>`, `<a =x href='q'>`, `<A HREF = "u v" Href=w>`,
		`<a href>`, `<a href=>`, `<a href= >`, `<a b="c>d" e=f/>`, `<a // x / y=z />`, `<img src=a.png/>`, `<a href="unclosed>`,
		`<a href="/?a=1&amp;b=2&amp;amp;c" title="x &amp; y">`, `<a href="&amp">`, `<a href="&amp;&amp;">`,
	} {
		checkRawAttrs(t, []byte(tag))
	}
}

// checkRawAttrs compares rawAttrs with Tokenizer.TagAttr on every start tag
// of data that rawAttrs would be used for.
func checkRawAttrs(t *testing.T, data []byte) {
	t.Helper()
	z := html.NewTokenizer(bytes.NewReader(data))
	for {
		tt := z.Next()
		if tt == html.ErrorToken {
			return
		}
		if tt != html.StartTagToken && tt != html.SelfClosingTagToken {
			continue
		}
		raw := bytes.Clone(z.Raw())
		if !plainAttrs(raw) {
			continue
		}
		var got, want []string
		seen := map[string]bool{}
		rawAttrs(raw, func(k, v []byte) {
			v = bytes.ReplaceAll(v, []byte("&amp;"), []byte("&"))
			k = bytes.Clone(k)
			for i, c := range k {
				if 'A' <= c && c <= 'Z' {
					k[i] = c + 'a' - 'A'
				}
			}
			if !seen[string(k)] {
				seen[string(k)] = true
				got = append(got, string(k)+"="+string(v))
			}
		})
		for _, a := range z.Token().Attr {
			want = append(want, a.Key+"="+a.Val)
		}
		if !slices.Equal(got, want) {
			t.Fatalf("rawAttrs(%q) = %q, the tokenizer reads %q", raw, got, want)
		}
	}
}

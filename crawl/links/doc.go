// Package links finds the links a crawler follows: in HTML pages, with
// HTML, and in sitemaps, with Sitemap. It is the link discovery of
// "polite fetch --follow" (issue #35), the part of wget -r, Scrapy's
// CrawlSpider or Colly that reads a page; which links to follow, and how to
// canonicalise and deduplicate them, is the caller's business.
//
//	found, page, err := links.HTML(found[:0], io.LimitReader(resp.Body, max), resp.Request.URL, "polite", links.Options{})
//	nofollow, _ := links.RobotsHeader(resp.Header, "polite")
//	for _, l := range found {
//		if page.NoFollow || nofollow || l.NoFollow { continue }
//		... enqueue l.URL ...
//	}
//
// # Which links
//
// HTML returns, in document order, <a href> and <area href> (Anchor),
// <iframe src> and <frame src> (Frame), and <link href> (Related, or
// Asset for a stylesheet, icon, manifest, preload or prefetch; a <link>
// whose rel is only dns-prefetch or preconnect names an origin and is
// skipped). With Options.Assets it also returns images (src and every
// srcset candidate), scripts, media sources, posters, tracks, embeds and
// objects. A link appears as often as the page has it: nothing is
// deduplicated. The URL of a <meta http-equiv=refresh> is not among the
// links but in Page.Refresh: it is a redirect, not a link.
//
// Text is not markup: nothing inside <script>, <style>, <textarea>,
// <title>, comments or other raw-text elements is read, whatever it looks
// like. <noscript> is the exception: the crawler runs no scripts, so, as
// the HTML spec has a user agent without scripting do, its contents are
// parsed as markup and their links count. In SVG, <a xlink:href> counts as
// an anchor.
//
// # Resolving
//
// Attribute values are taken as a browser takes them: entities decoded,
// leading and trailing spaces and controls trimmed, tabs and newlines
// inside removed, backslashes before the query read as slashes. They are
// resolved (RFC 3986 §5.2) against the base: the first <base href>
// wherever it is (later ones are ignored, HTML §4.2.3), itself resolved
// against the page URL, or the page URL when there is none or it is not
// http(s). As in a browser, the base applies to the whole document, links
// before the <base> element included. The fragment is removed. Only http
// and https results are kept: other schemes are dropped silently, as are
// same-document references ("" and "#top", RFC 3986 §4.4), while a value
// that does not parse, or resolves to a URL without a usable host, is
// dropped and counted in Page.Bad. Spaces, quotes, angle brackets and non-ASCII bytes
// in the result are percent-encoded; nothing else is normalised. Bytes are
// taken as UTF-8 whatever the page's charset.
//
// # Robots directives
//
// rel="nofollow" (or "sponsored", "ugc") marks one link, in Link.NoFollow.
// <meta name="robots" content="nofollow"> (or "none"), and the same with
// name equal to the crawler's product token, marks the whole page, in
// Page.NoFollow, wherever the element is; noindex is reported in
// Page.NoIndex. RobotsHeader reads the same directives from X-Robots-Tag
// header fields. None of these drops a link: the caller decides.
//
// # Sitemaps
//
// Sitemap streams a sitemap (https://www.sitemaps.org/protocol.html): XML
// <urlset> or <sitemapindex>, or a text file of URLs, gzipped or not,
// delivering each entry to a callback. It reads at most
// SitemapOptions.MaxBytes decompressed bytes and delivers at most
// SitemapOptions.MaxURLs entries (the protocol's 50 MiB and 50,000 by
// default), so a gzip bomb or an endless document stops with ErrTooBig.
// RSS and Atom feeds, which some search engines accept as sitemaps, are not
// read.
package links

package testbed

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
)

// StaticMonths is how many calendar months either side of January 2026
// WriteFiles writes: a static copy cannot hold an endless calendar, so its
// trap ends there (the months beyond answer 404 from a file server).
const StaticMonths = 120

// WriteFiles writes the site as files under dir, one directory per host
// (dir/h00.site.test/…), for a static file server such as nginx to serve the
// same bytes as the Website: a URL's path maps to the file of the same path,
// and a path ending in "/" to its index.html. It writes every page,
// robots.txt, the sitemaps, the assets and StaticMonths months of the
// calendar either side of its start, and sets each file's modification
// time to the Last-Modified the Website sends. A server then answers /m/<I>
// (a directory) with a redirect to /m/<I>/ by itself; ETags differ, being
// the server's own.
func (w *Website) WriteFiles(dir string) error {
	for _, h := range w.hosts {
		root := filepath.Join(dir, h.name)
		var paths []string
		for _, p := range h.pages {
			paths = append(paths, p.path)
		}
		paths = append(paths, "/robots.txt")
		if h.index != nil {
			paths = append(paths, "/sitemap_index.xml")
			for n := range h.parts {
				paths = append(paths, partPath(n+1))
			}
		}
		paths = append(paths, assetPaths()...)
		if h.calendar {
			for m := max(calendarStart-StaticMonths, firstMonth); m <= min(calendarStart+StaticMonths, lastMonth); m++ {
				paths = append(paths, monthPath(m))
			}
		}
		for _, path := range paths {
			_, body, mod, ok := h.content(path)
			if !ok {
				return fmt.Errorf("testbed: WriteFiles: %s%s has no content", h.name, path)
			}
			name := path
			if strings.HasSuffix(name, "/") {
				name += "index.html"
			}
			file := filepath.Join(root, filepath.FromSlash(name))
			if err := os.MkdirAll(filepath.Dir(file), 0o755); err != nil {
				return fmt.Errorf("testbed: WriteFiles: %w", err)
			}
			if err := os.WriteFile(file, []byte(body), 0o644); err != nil {
				return fmt.Errorf("testbed: WriteFiles: %w", err)
			}
			if err := os.Chtimes(file, mod, mod); err != nil {
				return fmt.Errorf("testbed: WriteFiles: %w", err)
			}
		}
	}
	return nil
}

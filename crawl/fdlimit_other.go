//go:build !unix

package crawl

// fdLimit is 0: no file descriptor limit is known here.
func fdLimit() int { return 0 }

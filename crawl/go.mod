module github.com/polite-go/polite/crawl

go 1.26.0

require (
	github.com/klauspost/compress v1.20.4
	github.com/polite-go/polite v0.0.0
	golang.org/x/net v0.62.0
	modernc.org/sqlite v1.60.1
)

require (
	github.com/dustin/go-humanize v1.0.1 // indirect
	github.com/google/uuid v1.6.0 // indirect
	github.com/mattn/go-isatty v0.0.24 // indirect
	github.com/ncruces/go-strftime v1.0.0 // indirect
	github.com/remyoudompheng/bigfft v0.0.0-20230129092748-24d4a6f8daec // indirect
	golang.org/x/sys v0.49.0 // indirect
	golang.org/x/text v0.43.0 // indirect
	modernc.org/libc v1.77.1 // indirect
	modernc.org/mathutil v1.7.1 // indirect
	modernc.org/memory v1.12.1 // indirect
)

// The crawl job lives in its own module so that SQLite stays out of the
// library's dependencies; it is developed against the library beside it.
replace github.com/polite-go/polite => ../

module github.com/polite-go/polite/redisstore

go 1.26.0

require (
	github.com/cespare/xxhash/v2 v2.3.0
	github.com/polite-go/polite v0.0.0
	github.com/redis/go-redis/v9 v9.23.0
)

require (
	go.uber.org/atomic v1.12.0 // indirect
	golang.org/x/net v0.62.0 // indirect
	golang.org/x/sys v0.49.0 // indirect
	golang.org/x/text v0.43.0 // indirect
)

// The Redis store lives in its own module so that go-redis stays out of the
// library's dependencies; it is developed against the library beside it.
replace github.com/polite-go/polite => ../

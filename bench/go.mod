module github.com/polite-go/polite/bench

go 1.26.0

require (
	github.com/polite-go/polite v0.0.0
	github.com/sethvargo/go-limiter v0.7.1
	go.uber.org/ratelimit v0.3.1
	golang.org/x/time v0.16.0
)

require (
	github.com/benbjohnson/clock v1.3.0 // indirect
	golang.org/x/net v0.62.0 // indirect
	golang.org/x/text v0.43.0 // indirect
)

replace github.com/polite-go/polite => ../

module github.com/polite-go/polite

go 1.26

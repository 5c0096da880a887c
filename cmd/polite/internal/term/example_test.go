package term_test

import (
	"fmt"

	"github.com/polite-go/polite/cmd/polite/internal/term"
)

func ExampleQuote() {
	reason := "503 \x1b[2J\x1b]52;c;cHduZWQ=\a Überlastet"
	fmt.Println(term.Quote(reason))
	// Output: 503 \x1b[2J\x1b]52;c;cHduZWQ=\a Überlastet
}

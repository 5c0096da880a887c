package report

import (
	"bytes"
	"encoding/csv"
	"fmt"
	"strconv"
	"testing"
)

// TestCSV: hosts.csv holds every host, the table's cap notwithstanding,
// with the same counts, names as text (CSV quoting) and formula-like
// names defused with a leading '.
func TestCSV(t *testing.T) {
	names := func(i int) string {
		switch i % 4 {
		case 0:
			return fmt.Sprintf(`=HYPERLINK("http://evil/%d")`, i)
		case 1:
			return fmt.Sprintf(`<script>alert(%d)</script>,"x".test`, i)
		case 2:
			return fmt.Sprintf("@h%d.test", i)
		}
		return fmt.Sprintf("h%d.test", i)
	}
	res, ev := synth(3000, MaxHosts+100, names)
	d, err := Read(bytes.NewReader(res), bytes.NewReader(ev), Job{})
	if err != nil {
		t.Fatal(err)
	}
	if d.HostsCut != 100 {
		t.Fatalf("%d hosts cut from the table, want 100", d.HostsCut)
	}
	var buf bytes.Buffer
	if err := WriteCSV(&buf, d); err != nil {
		t.Fatal(err)
	}
	rows, err := csv.NewReader(&buf).ReadAll()
	if err != nil {
		t.Fatalf("hosts.csv does not read back: %v", err)
	}
	if len(rows) != MaxHosts+100+1 {
		t.Fatalf("hosts.csv has %d rows, want a header and %d hosts", len(rows), MaxHosts+100)
	}
	requests := 0
	seen := map[string]bool{}
	for _, r := range rows[1:] {
		n, _ := strconv.Atoi(r[1])
		requests += n
		switch c := r[0][0]; c {
		case '=', '+', '-', '@':
			t.Errorf("cell %q starts with %c: a spreadsheet runs it", r[0], c)
		}
		seen[r[0]] = true
	}
	if requests != d.Requests {
		t.Errorf("hosts.csv's requests sum to %d, want %d", requests, d.Requests)
	}
	for _, want := range []string{`'=HYPERLINK("http://evil/0")`, `<script>alert(1)</script>,"x".test`, "'@h2.test", "h3.test"} {
		if !seen[want] {
			t.Errorf("hosts.csv has no host %q", want)
		}
	}
}

package report

import (
	"encoding/csv"
	"io"
	"math"
	"strconv"
)

// CSVFile is the file beside the page holding every host's row (the
// page's table is capped at MaxHosts).
const CSVFile = "hosts.csv"

// csvHeader are hosts.csv's columns.
var csvHeader = []string{"host", "requests", "ok", "ok_pct", "429s", "503s", "urls", "urls_ok", "p50_ms", "p95_ms",
	"rate", "min_rate", "max_rate", "capacity", "capacity_measured", "paused_s", "breaker_opens"}

// WriteCSV writes every host of d (AllHosts, most throttled first) as CSV.
// A cell a spreadsheet would take for a formula (starting with =, +, -,
// @, a tab or a carriage return) gets a leading ' (OWASP's advice on CSV
// injection): a host name is outside input.
func WriteCSV(w io.Writer, d *Data) error {
	cw := csv.NewWriter(w)
	if err := cw.Write(csvHeader); err != nil {
		return err
	}
	row := make([]string, len(csvHeader))
	for _, h := range d.AllHosts {
		okPct := 100 * float64(h.OK) / float64(max(h.Requests, 1))
		row = append(row[:0], cell(h.Name), itoa(h.Requests), itoa(h.OK), ftoa(okPct), itoa(h.S429), itoa(h.S503),
			itoa(h.URLs), itoa(h.URLsOK), ftoa(h.P50), ftoa(h.P95), ftoa(h.Rate), ftoa(h.MinRate), ftoa(h.MaxRate),
			ftoa(h.Capacity), strconv.FormatBool(h.Measured), ftoa(h.Paused), itoa(h.BreakerOpens))
		if err := cw.Write(row); err != nil {
			return err
		}
	}
	cw.Flush()
	return cw.Error()
}

// cell defuses a text cell a spreadsheet would run as a formula.
func cell(s string) string {
	if s != "" {
		switch s[0] {
		case '=', '+', '-', '@', '\t', '\r':
			return "'" + s
		}
	}
	return s
}

func itoa(n int) string { return strconv.Itoa(n) }

// ftoa formats a figure; "" when there is none, "inf" for no limit.
func ftoa(v float64) string {
	switch {
	case math.IsNaN(v):
		return ""
	case math.IsInf(v, 0) || v > 1e15:
		return "inf"
	}
	return strconv.FormatFloat(math.Round(v*1000)/1000, 'f', -1, 64)
}

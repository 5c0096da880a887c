package audit

import "github.com/polite-go/polite/internal/flatjson"

// scanRecord reads a line as Log writes it into rec without encoding/json
// (see flatjson), and reports false for any other line, which read then
// has json.Unmarshal read: a report of 100,000 URLs spent some 2 µs a URL
// in json.Unmarshal here (issue 34, part 2).
func scanRecord(line []byte, rec *Record) bool {
	return flatjson.Scan(line, func(key []byte, k flatjson.Kind, v []byte) bool {
		switch string(key) {
		case "t":
			return flatjson.SetInt64(&rec.T, k, v)
		case "k":
			return flatjson.SetString(&rec.Kind, k, v)
		case "h":
			return flatjson.SetString(&rec.Host, k, v)
		case "id":
			return flatjson.SetUint64(&rec.ID, k, v)
		case "r":
			return flatjson.SetString(&rec.Reason, k, v)
		case "a":
			return flatjson.SetInt(&rec.Attempt, k, v)
		case "s":
			return flatjson.SetInt(&rec.Status, k, v)
		case "o":
			return flatjson.SetString(&rec.Outcome, k, v)
		case "lat":
			return flatjson.SetFloat(&rec.Latency, k, v)
		case "d":
			return flatjson.SetFloat(&rec.Delay, k, v)
		case "rate":
			if k == flatjson.Null {
				rec.Rate = nil
				return true
			}
			var f float64
			if !flatjson.SetFloat(&f, k, v) {
				return false
			}
			rec.Rate = &f
		case "prev":
			return flatjson.SetFloat(&rec.Prev, k, v)
		case "cap":
			return flatjson.SetFloat(&rec.Cap, k, v)
		case "cap_err":
			return flatjson.SetFloat(&rec.CapErr, k, v)
		case "meas":
			return flatjson.SetBool(&rec.Meas, k)
		case "ph":
			return flatjson.SetString(&rec.Phase, k, v)
		case "ra":
			return flatjson.SetString(&rec.RA, k, v)
		case "req":
			return flatjson.SetFloat(&rec.Req, k, v)
		case "cl":
			return flatjson.SetBool(&rec.Clamped, k)
		case "rl":
			return flatjson.SetString(&rec.RL, k, v)
		case "det":
			return flatjson.SetString(&rec.Detail, k, v)
		case "err":
			return flatjson.SetString(&rec.Err, k, v)
		}
		return true
	})
}

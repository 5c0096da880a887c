package flatjson

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"
)

// members returns what Scan read of line, one "key kind value" a member.
func members(line string) (string, bool) {
	var b strings.Builder
	ok := Scan([]byte(line), func(key []byte, k Kind, v []byte) bool {
		fmt.Fprintf(&b, "%s %d %s;", key, k, v)
		return true
	})
	return b.String(), ok
}

func TestScan(t *testing.T) {
	for _, tc := range []struct {
		name, line, want string
		ok               bool
	}{
		{"flat", `{"a":"x","b":-1.5e+3,"c":true,"d":false,"e":null,"f":0}` + "\n",
			"a 1 x;b 2 -1.5e+3;c 3 true;d 4 false;e 5 null;f 2 0;", true},
		{"spaces", " {\t\"a\" : \"\" ,\r\n \"b\":1 } ", "a 1 ;b 2 1;", true},
		{"empty", `{}`, "", true},
		{"escape", `{"a":"\"x"}`, "", false},
		{"non-ASCII", `{"a":"é"}`, "", false},
		{"control", "{\"a\":\"\t\"}", "", false},
		{"upper-case key", `{"A":1}`, "", false},
		{"nested", `{"a":{"b":1}}`, "", false},
		{"array", `{"a":[1]}`, "", false},
		{"trailing", `{"a":1} {`, "a 2 1;", false},
		{"cut", `{"a":1`, "a 2 1;", false},
		{"trailing comma", `{"a":1,}`, "a 2 1;", false},
		{"leading zero", `{"a":01}`, "a 2 0;", false},
		{"bare minus", `{"a":-}`, "", false},
		{"no exponent digits", `{"a":1e}`, "", false},
		{"word", `{"a":nul}`, "", false},
		{"word run on", `{"a":truex}`, "a 3 true;", false},
		{"not JSON", `a=1`, "", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, ok := members(tc.line)
			if got != tc.want || ok != tc.ok {
				t.Errorf("Scan(%q) = %q, %v, want %q, %v", tc.line, got, ok, tc.want, tc.ok)
			}
			if ok && !json.Valid([]byte(tc.line)) {
				t.Errorf("Scan(%q) read a line that is not JSON", tc.line)
			}
		})
	}
}

// FuzzScan: what Scan reads is JSON, and json.Unmarshal reads the same
// members from it.
func FuzzScan(f *testing.F) {
	f.Add([]byte(`{"a":"x","b":-1.5e+3,"c":true,"d":false,"e":null}`))
	f.Add([]byte(`{"t":1,"k":"attempt","lat":0.25}`))
	f.Fuzz(func(t *testing.T, line []byte) {
		got := map[string]any{}
		ok := Scan(line, func(key []byte, k Kind, v []byte) bool {
			switch k {
			case String:
				got[string(key)] = string(v)
			case Number:
				got[string(key)] = json.Number(v)
			case True, False:
				got[string(key)] = k == True
			case Null:
				got[string(key)] = nil
			}
			return true
		})
		if !ok {
			return
		}
		d := json.NewDecoder(strings.NewReader(string(line)))
		d.UseNumber()
		var want map[string]any
		if err := d.Decode(&want); err != nil || !json.Valid(line) {
			t.Fatalf("Scan(%q) read %v; json: %v", line, got, err)
		}
		if fmt.Sprint(got) != fmt.Sprint(want) {
			t.Fatalf("Scan(%q) = %v, json %v", line, got, want)
		}
	})
}

func TestSet(t *testing.T) {
	var s string
	var i int
	var i64 int64
	var u uint64
	var f float64
	var b bool
	for _, tc := range []struct {
		name string
		ok   bool
		set  func() bool
	}{
		{"string", true, func() bool { return SetString(&s, String, []byte("x")) }},
		{"string null", true, func() bool { return SetString(&s, Null, []byte("null")) }},
		{"string number", false, func() bool { return SetString(&s, Number, []byte("1")) }},
		{"int", true, func() bool { return SetInt(&i, Number, []byte("-7")) }},
		{"int fraction", false, func() bool { return SetInt(&i, Number, []byte("1.5")) }},
		{"int string", false, func() bool { return SetInt(&i, String, []byte("1")) }},
		{"int64", true, func() bool { return SetInt64(&i64, Number, []byte("1764190800000")) }},
		{"uint64 negative", false, func() bool { return SetUint64(&u, Number, []byte("-1")) }},
		{"uint64", true, func() bool { return SetUint64(&u, Number, []byte("18446744073709551615")) }},
		{"float", true, func() bool { return SetFloat(&f, Number, []byte("1e-3")) }},
		{"float too big", false, func() bool { return SetFloat(&f, Number, []byte("1e400")) }},
		{"bool", true, func() bool { return SetBool(&b, True) }},
		{"bool number", false, func() bool { return SetBool(&b, Number) }},
	} {
		if ok := tc.set(); ok != tc.ok {
			t.Errorf("%s: ok = %v, want %v", tc.name, ok, tc.ok)
		}
	}
	if s != "x" || i != -7 || i64 != 1764190800000 || u != 1<<64-1 || f != 1e-3 || !b {
		t.Errorf("set %q %d %d %d %g %v", s, i, i64, u, f, b)
	}
}

package scope

import "testing"

func TestPatternSame(t *testing.T) {
	tests := []struct{ name, a, b string }{
		{"calendar", "http://h/cal/2026/12?day=3", "http://h/cal/2027/01?day=15"},
		{"number length", "http://h/item/7", "http://h/item/123456"},
		{"number in a word", "http://h/item-7.html", "http://h/item-12.html"},
		{"page parameter", "http://h/list?page=2", "http://h/list?page=99999"},
		{"values ignored", "http://h/s?q=apples&sort=asc", "http://h/s?q=pears&sort=desc"},
		{"uuid", "http://h/u/550e8400-e29b-41d4-a716-446655440000/x", "http://h/u/6ba7b810-9dad-11d1-80b4-00c04fd430c8/x"},
		{"hex id", "http://h/s/8f14e45fceea167a/p", "http://h/s/c9f0f895fb98ab91/p"},
		{"hex id upper case", "http://h/s/8F14E45FCEEA167A", "http://h/s/0A1B2C3D"},
		{"hex id and number", "http://h/s/8f14e45fceea167a", "http://h/s/12"},
		{"date", "http://h/2026-12-03/", "http://h/1999-01-01/"},
		{"session id in a name", "http://h/;jsessionid=0a1b2c3d4e5f", "http://h/;jsessionid=ffee0011aa22"},
		{"numbered name", "http://h/?f1=a&f2=b", "http://h/?f10=x&f20=y"},
		{"fragment ignored", "http://h/a#x", "http://h/a"},
		{"scheme ignored", "http://h/a", "https://h/a"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if a, b := Pattern(tt.a), Pattern(tt.b); a != b {
				t.Errorf("Pattern(%q) = %#x, Pattern(%q) = %#x, want equal", tt.a, a, tt.b, b)
			}
		})
	}
}

func TestPatternDifferent(t *testing.T) {
	tests := []struct{ name, a, b string }{
		{"host", "http://a/x", "http://b/x"},
		{"host digits kept", "http://s1.h/x", "http://s2.h/x"},
		{"port", "http://h/x", "http://h:8080/x"},
		{"word", "http://h/items", "http://h/item"},
		{"segments", "http://h/cal/2026/12", "http://h/cal/2026"},
		{"trailing slash", "http://h/a", "http://h/a/"},
		{"parameter name", "http://h/?day=1", "http://h/?week=1"},
		{"parameter order", "http://h/?a=1&b=1", "http://h/?b=1&a=1"},
		{"repeated parameter", "http://h/?a=1", "http://h/?a=1&a=2"},
		{"query or not", "http://h/a", "http://h/a?"},
		{"words of hex letters", "http://h/deadbeefcafe", "http://h/cafebabedead"},
		{"short hex", "http://h/ab12", "http://h/cd12"},
		{"path is not a name", "http://h/a", "http://h/?a"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if a, b := Pattern(tt.a), Pattern(tt.b); a == b {
				t.Errorf("Pattern(%q) = Pattern(%q) = %#x, want them different", tt.a, tt.b, a)
			}
		})
	}
}

// Crawls store patterns: the hash of a shape must never change.
func TestPatternStable(t *testing.T) {
	tests := []struct {
		norm string
		want uint64
	}{
		{"", 0xcbf29ce484222325}, // FNV-1a 64's offset basis
		{"http://h/", fnv("h/")},
		{"http://h/cal/2026/12?day=3", fnv("h/cal/\x00/\x00?day&")},
		{"https://a.example:8443/u/550e8400-e29b-41d4-a716-446655440000/p2x?id=9&utm_x=1", fnv("a.example:8443/u/\x00/p\x00x?id&utm_x&")},
		{"http://h/cal/2026/12?day=3", 0x2a6b1b54d40b7cd5},
	}
	for _, tt := range tests {
		if got := Pattern(tt.norm); got != tt.want {
			t.Errorf("Pattern(%q) = %#x, want %#x", tt.norm, got, tt.want)
		}
	}
}

// fnv is FNV-1a 64 as hash/fnv computes it.
func fnv(s string) uint64 {
	h := uint64(14695981039346656037)
	for i := 0; i < len(s); i++ {
		h ^= uint64(s[i])
		h *= 1099511628211
	}
	return h
}

func TestPatternDoesNotAllocate(t *testing.T) {
	if raceEnabled {
		t.Skip("the race detector allocates")
	}
	u := "https://www.example.com/cal/2026/12/550e8400-e29b-41d4-a716-446655440000?day=3&view=week&utm_source=x"
	if n := testing.AllocsPerRun(100, func() { Pattern(u) }); n != 0 {
		t.Errorf("Pattern allocates %v times, want 0", n)
	}
}

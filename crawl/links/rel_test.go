package links

import (
	"net/http"
	"testing"
)

func TestRobotsHeader(t *testing.T) {
	for _, tc := range []struct {
		name              string
		values            []string
		nofollow, noindex bool
	}{
		{"none", nil, false, false},
		{"both", []string{"noindex, nofollow"}, true, true},
		{"none directive", []string{"NONE"}, true, true},
		{"nofollow", []string{"nofollow"}, true, false},
		{"all", []string{"all"}, false, false},
		{"several fields", []string{"noindex", "nofollow"}, true, true},
		{"for us", []string{"polite: nofollow"}, true, false},
		{"for us, case-insensitive, both", []string{"Polite: noindex, nofollow"}, true, true},
		{"for another", []string{"googlebot: noindex, nofollow"}, false, false},
		{"rescoped in one field", []string{"googlebot: nofollow, polite: noindex"}, false, true},
		{"another then everyone in a new field", []string{"otherbot: nofollow", "noindex"}, false, true},
		{"valued directive is no agent", []string{"unavailable_after: 25 Jun 2010 15:00:00 PST, nofollow"}, true, false},
		{"max-snippet", []string{"max-snippet: 20, noindex"}, false, true},
		{"unknown ignored", []string{"noarchive, nosnippet, notranslate"}, false, false},
	} {
		h := http.Header{}
		for _, v := range tc.values {
			h.Add("X-Robots-Tag", v)
		}
		nf, ni := RobotsHeader(h, "polite/1.0")
		if nf != tc.nofollow || ni != tc.noindex {
			t.Errorf("%s: RobotsHeader(%q, polite/1.0) = %v, %v; want %v, %v", tc.name, tc.values, nf, ni, tc.nofollow, tc.noindex)
		}
	}
	h := http.Header{"X-Robots-Tag": {": nofollow"}}
	if nf, _ := RobotsHeader(h, ""); nf {
		t.Errorf("RobotsHeader(%q, \"\") = nofollow: an empty agent matched an empty name", h)
	}
}

func TestRefreshURL(t *testing.T) {
	for in, want := range map[string]string{
		"0;url=/a":        "/a",
		"0; URL = '/a b'": "/a b",
		`1.5, "/q" x`:     "/q",
		"0 /plain":        "/plain",
		"0; url":          "url",
		"0;":              "",
		"x; url=/a":       "",
		"5":               "",
		"":                "",
		"0; url='/open":   "/open",
	} {
		if got := string(refreshURL([]byte(in))); got != want {
			t.Errorf("refreshURL(%q) = %q, want %q", in, got, want)
		}
	}
}

package scope

import (
	"regexp"
	"testing"
)

var benchURLs = []struct{ name, raw string }{
	{"normal", "https://www.example.com/docs/guide/install.html?lang=en&v=2"},
	{"messy", "HTTPS://User@WWW.Example.COM:443/docs/./guide/../guide/%7einstall.html?utm_source=x&lang=en&&v=2#top"},
	{"idn", "https://Bücher.example/Straße?q=ä"},
}

func BenchmarkNormalize(b *testing.B) {
	o := NormOptions{StripParams: DefaultStripParams}
	for _, u := range benchURLs {
		b.Run(u.name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				if _, err := Normalize(u.raw, o); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

func benchScope(b *testing.B, m Mode) *Scope {
	s := New(Rules{
		Mode:    m,
		Exclude: []*regexp.Regexp{regexp.MustCompile(`/logout|/cart`)},
		Norm:    NormOptions{StripParams: DefaultStripParams},
	})
	for _, seed := range []string{"https://www.example.com/docs/", "https://other.example/", "http://localhost:8080/"} {
		if err := s.AddSeed(seed); err != nil {
			b.Fatal(err)
		}
	}
	return s
}

func BenchmarkCheck(b *testing.B) {
	for _, m := range []Mode{Host, Domain, Prefix, Any} {
		for _, u := range benchURLs[:2] {
			s := benchScope(b, m)
			b.Run(m.String()+"/"+u.name, func(b *testing.B) {
				b.ReportAllocs()
				for b.Loop() {
					s.Check(u.raw, 1)
				}
			})
			b.Run(m.String()+"/"+u.name+"/parallel", func(b *testing.B) {
				b.ReportAllocs()
				b.RunParallel(func(pb *testing.PB) {
					for pb.Next() {
						s.Check(u.raw, 1)
					}
				})
			})
		}
	}
}

func BenchmarkPattern(b *testing.B) {
	u := "https://www.example.com/cal/2026/12/550e8400-e29b-41d4-a716-446655440000?day=3&view=week"
	b.ReportAllocs()
	b.SetBytes(int64(len(u)))
	for b.Loop() {
		Pattern(u)
	}
}

package cli

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"math"
	"net"
	"os"
	"path"
	"reflect"
	"regexp"
	"strconv"
	"strings"

	"github.com/BurntSushi/toml"

	"github.com/polite-go/polite"
	"github.com/polite-go/polite/bucket"
	"github.com/polite-go/polite/inflight"
)

// config is a --config file: per-host rules.
type config struct {
	Rules []rule `toml:"rule"`

	match *polite.Registry // chooses a host's rule, as the Transport does
	name  string           // the file's path
	lines []int            // each rule's [[rule]] line
}

// rule is one [[rule]] table. Pointers tell a field left out from a zero.
type rule struct {
	Hosts       string   `toml:"hosts"`
	Rate        *rateVal `toml:"rate"`
	Burst       *int     `toml:"burst"`
	Concurrency *int     `toml:"concurrency"`
	Smooth      *bool    `toml:"smooth"`
	Retries     *int     `toml:"retries"`
	// MaxRate lets an adaptive rate rise above rate, up to it; without it
	// a rule's rate is also its hosts' ceiling.
	MaxRate *rateVal `toml:"max_rate"`
	// Adaptive turns --adaptive on or off for the rule's hosts.
	Adaptive *bool `toml:"adaptive"`
}

// rateVal is a rule's rate: a number of requests per second, or inf (as
// TOML's bare inf or the string "inf" that --rate takes; issue 33, item
// 11: rate = "inf" was a type error).
type rateVal float64

// UnmarshalTOML implements toml.Unmarshaler.
func (r *rateVal) UnmarshalTOML(v any) error {
	switch x := v.(type) {
	case float64:
		*r = rateVal(x)
	case int64:
		*r = rateVal(x)
	case string:
		switch strings.ToLower(strings.TrimSpace(x)) {
		case "inf", "+inf", "unlimited":
			*r = rateVal(math.Inf(1))
		default:
			return fmt.Errorf("a rate wants a number of requests per second, or inf, not %q", x)
		}
	default:
		return fmt.Errorf("a rate wants a number of requests per second, or inf, not %T", v)
	}
	return nil
}

// loadConfig reads and checks a rules file. Its errors name the file and
// line.
func loadConfig(name string) (*config, error) {
	src, err := os.ReadFile(name)
	if err != nil {
		return nil, fmt.Errorf("--config: %w", err)
	}
	return parseConfig(name, src)
}

// ruleKeys are the keys a [[rule]] takes, from its struct's tags.
func ruleKeys() []string {
	t := reflect.TypeFor[rule]()
	keys := make([]string, t.NumField())
	for i := range keys {
		keys[i] = t.Field(i).Tag.Get("toml")
	}
	return keys
}

// decodeTOML decodes src into v, with errors that name the file and line.
func decodeTOML(name string, src []byte, v any) (toml.MetaData, error) {
	md, err := toml.Decode(string(src), v)
	if err != nil {
		var pe toml.ParseError
		if errors.As(err, &pe) {
			return md, fmt.Errorf("%s:%d: %s", name, pe.Position.Line, pe.Message)
		}
		// A type mismatch ("burst" given a string): on the line the
		// decoder names (else found by its key), in the file's terms,
		// not the decoder's.
		line := lineOfError(src, err)
		if m := regexp.MustCompile(`^toml: line (\d+)`).FindStringSubmatch(err.Error()); m != nil {
			line, _ = strconv.Atoi(m[1])
		}
		return md, fmt.Errorf("%s:%d: %s", name, line, typeError(err))
	}
	return md, nil
}

// typeError says what a TOML decoding error means for the key it names:
// "burst: want a whole number, not a string" rather than the decoder's
// "toml: line 3 (last key "rule.burst"): incompatible types: TOML value
// has type string; destination has type integer" (the line said twice).
func typeError(err error) string {
	msg := err.Error()
	key := ""
	if m := regexp.MustCompile(`last key "(?:[a-z_]+\.)*([A-Za-z_]+)"`).FindStringSubmatch(msg); m != nil {
		key = m[1]
	}
	if m := regexp.MustCompile(`TOML value has type ([\w.-]+); destination has type ([\w.-]+)`).FindStringSubmatch(msg); m != nil && key != "" {
		kind := func(t string) string {
			switch strings.TrimLeft(t, "*") {
			case "integer", "int", "int64", "uint", "uint64":
				return "a whole number"
			case "float", "float64", "float32":
				return "a number"
			case "bool", "boolean":
				return "true or false"
			case "string":
				return "a string"
			}
			return article(t) + " " + t
		}
		return fmt.Sprintf("%s: want %s, not %s", key, kind(m[2]), kind(m[1]))
	}
	if i := strings.Index(msg, "): "); key != "" && i >= 0 {
		return key + ": " + msg[i+3:]
	}
	return strings.TrimPrefix(msg, "toml: ")
}

func article(w string) string {
	if w != "" && strings.ContainsRune("aeiou", rune(w[0])) {
		return "an"
	}
	return "a"
}

func parseConfig(name string, src []byte) (*config, error) {
	var c config
	md, err := decodeTOML(name, src, &c)
	if err != nil {
		return nil, err
	}
	if und := md.Undecoded(); len(und) > 0 {
		// Every typo at once, not the first alone (issue 33, item 11).
		var lines []string
		for _, k := range und {
			lines = append(lines, fmt.Sprintf("%s:%d: unknown key %q", name, lineOfKey(src, k[len(k)-1], -1), k.String()))
		}
		return nil, fmt.Errorf("%s (want %s under [[rule]])", strings.Join(lines, "\n"), strings.Join(ruleKeys(), ", "))
	}
	for i, r := range c.Rules {
		at := func(key string) string { return fmt.Sprintf("%s:%d", name, lineOfKey(src, key, i)) }
		switch {
		case r.Hosts == "":
			return nil, fmt.Errorf("%s:%d: rule %d has no hosts = \"pattern\"", name, lineOfTable(src, i), i+1)
		case !validGlob(r.Hosts):
			return nil, fmt.Errorf("%s: hosts %q is not a valid glob", at("hosts"), r.Hosts)
		case r.Rate != nil && (math.IsNaN(float64(*r.Rate)) || *r.Rate <= 0):
			return nil, fmt.Errorf("%s: rate %v: must be positive (inf for no limit)", at("rate"), float64(*r.Rate))
		case r.MaxRate != nil && (math.IsNaN(float64(*r.MaxRate)) || *r.MaxRate <= 0 || math.IsInf(float64(*r.MaxRate), 1)):
			return nil, fmt.Errorf("%s: max_rate %v: must be a positive number of requests per second", at("max_rate"), float64(*r.MaxRate))
		case r.Burst != nil && *r.Burst < 1:
			return nil, fmt.Errorf("%s: burst %d: must be at least 1", at("burst"), *r.Burst)
		case r.Concurrency != nil && *r.Concurrency < 1:
			return nil, fmt.Errorf("%s: concurrency %d: must be at least 1", at("concurrency"), *r.Concurrency)
		case r.Retries != nil && *r.Retries < -1:
			return nil, fmt.Errorf("%s: retries %d: must be -1 (none) or more", at("retries"), *r.Retries)
		}
	}
	c.match = &polite.Registry{Rules: c.politeRules()}
	c.name = name
	for i := range c.Rules {
		c.lines = append(c.lines, lineOfTable(src, i))
	}
	return &c, nil
}

// anyRetries reports whether a rule sets retries.
func (c *config) anyRetries() bool {
	for _, r := range c.Rules {
		if r.Retries != nil {
			return true
		}
	}
	return false
}

func validGlob(p string) bool {
	_, err := path.Match(p, "")
	return err == nil
}

func tableHeader(name string) *regexp.Regexp {
	return regexp.MustCompile(`^\s*\[\[\s*` + regexp.QuoteMeta(name) + `\s*\]\]`)
}

// lineOfTable returns the line of the i-th [[rule]] header.
func lineOfTable(src []byte, i int) int { return lineOfNthTable(src, "rule", i) }

// lineOfNthTable returns the line of the i-th [[name]] header.
func lineOfNthTable(src []byte, name string, i int) int {
	re := tableHeader(name)
	n, seen := 0, -1
	sc := bufio.NewScanner(bytes.NewReader(src))
	for sc.Scan() {
		n++
		if re.MatchString(sc.Text()) {
			if seen++; seen == i {
				return n
			}
		}
	}
	return 1
}

// lineOfKey returns the line where key is set in the i-th [[rule]] (any
// table when i < 0), or the table's header line.
func lineOfKey(src []byte, key string, i int) int { return lineOfKeyAt(src, "rule", key, i) }

// lineOfKeyIn returns the first line setting key in any [[table]].
func lineOfKeyIn(src []byte, table, key string) int { return lineOfKeyAt(src, table, key, -1) }

func lineOfKeyAt(src []byte, table, key string, i int) int {
	re := tableHeader(table)
	n, seen := 0, -1
	sc := bufio.NewScanner(bytes.NewReader(src))
	for sc.Scan() {
		n++
		line := sc.Text()
		if re.MatchString(line) {
			seen++
			continue
		}
		if i >= 0 && seen != i {
			continue
		}
		k, _, ok := strings.Cut(line, "=")
		if ok && strings.Trim(strings.TrimSpace(k), `"'`) == key {
			return n
		}
	}
	if i >= 0 {
		return lineOfNthTable(src, table, i)
	}
	return 1
}

// lineOfError finds the line a decoding error is about from the key it
// names, if any.
func lineOfError(src []byte, err error) int {
	m := regexp.MustCompile(`"(?:rule\.)?([A-Za-z_]+)"`).FindStringSubmatch(err.Error())
	if m == nil {
		return 1
	}
	return lineOfKey(src, m[1], -1)
}

// politeRules turns the rules into the Transport's: fields left out take
// the flags' values (the Transport's Limits), as polite's zero fields do.
func (c *config) politeRules() []polite.Rule {
	var out []polite.Rule
	for _, r := range c.Rules {
		pr := polite.Rule{Pattern: strings.ToLower(r.Hosts)}
		if r.Rate != nil {
			pr.Rate = float64(*r.Rate)
			if math.IsInf(pr.Rate, 1) {
				pr.Rate = bucket.Inf
			} else {
				pr.MaxRate = pr.Rate // a rule's rate is a ceiling...
			}
		}
		if r.MaxRate != nil && *r.MaxRate > 0 {
			pr.MaxRate = float64(*r.MaxRate) // ...unless it says how far above it may go
		}
		if r.Burst != nil {
			pr.Burst = *r.Burst
		}
		if r.Concurrency != nil {
			pr.Concurrency = min(*r.Concurrency, inflight.Max)
		}
		if r.Smooth != nil {
			pr.Smooth = *r.Smooth
		}
		out = append(out, pr)
	}
	return out
}

// idle returns a warning for each rule no host of the job picks (each
// yields the job's host keys; keyOf gives the key the Transport's budgets
// and rules go by): its pattern matches none of them, or the hosts it
// matches pick another rule (an exact name, or a longer pattern, comes
// first). A typo in a rules file would otherwise hold no one, silently
// (issue 33, item 11).
func (c *config) idle(each func(func(string) bool) error, keyOf func(host string) string) ([]string, error) {
	if c == nil || len(c.Rules) == 0 {
		return nil, nil
	}
	used := make([]bool, len(c.Rules))
	hosts, left := 0, len(c.Rules)
	err := each(func(h string) bool {
		hosts++
		if i := c.match.RuleIndex(keyOf(h)); i >= 0 && !used[i] {
			used[i] = true
			left--
		}
		return true // every host: the count goes in the message
	})
	if err != nil || left == 0 {
		return nil, err
	}
	// A second pass, only for a rule left unused: a host it matches.
	taken := make([]string, len(c.Rules))
	err = each(func(h string) bool {
		k := keyOf(h)
		host, _, err := net.SplitHostPort(k)
		if err != nil {
			host = k
		}
		n := 0
		for i, r := range c.Rules {
			if used[i] || taken[i] != "" {
				continue
			}
			n++
			if ok, _ := path.Match(r.Hosts, k); ok || r.Hosts == k || r.Hosts == host {
				taken[i] = k
			} else if ok, _ := path.Match(r.Hosts, host); ok {
				taken[i] = k
			}
		}
		return n > 0
	})
	if err != nil {
		return nil, err
	}
	var out []string
	for i, u := range used {
		if u {
			continue
		}
		why := fmt.Sprintf("it matches none of the job's %d hosts", hosts)
		if hosts == 1 {
			why = "it does not match the job's one host"
		}
		if k := taken[i]; k != "" {
			j := c.match.RuleIndex(k)
			why = fmt.Sprintf("the hosts it matches pick rule %d (hosts = %q) first, as %s does", j+1, c.Rules[j].Hosts, k)
		}
		out = append(out, fmt.Sprintf("%s:%d: rule %d (hosts = %q) applies to no host the list names: %s", c.name, c.lines[i], i+1, c.Rules[i].Hosts, why))
	}
	return out, nil
}

// adaptiveFor returns whether the rule for a host key makes its rate
// adaptive, and false for ok when its rule leaves that to --adaptive.
func (c *config) adaptiveFor(key string) (on, ok bool) {
	i := c.match.RuleIndex(key)
	if i < 0 || c.Rules[i].Adaptive == nil {
		return false, false
	}
	return *c.Rules[i].Adaptive, true
}

// anyAdaptive reports whether a rule sets the adaptive key.
func (c *config) anyAdaptive() bool {
	for _, r := range c.Rules {
		if r.Adaptive != nil {
			return true
		}
	}
	return false
}

// retriesFor returns the retries the rule for a host key sets (-1 for
// none), or 0 when its rule leaves retries out, or no rule applies: the
// flag's value then. The rule is the one the Transport picks for the key.
func (c *config) retriesFor(key string) int {
	i := c.match.RuleIndex(key)
	if i < 0 || c.Rules[i].Retries == nil {
		return 0
	}
	if n := *c.Rules[i].Retries; n != 0 {
		return n
	}
	return -1 // "retries = 0": none
}

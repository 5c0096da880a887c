package cli

import (
	"bufio"
	"bytes"
	"fmt"
	"os"
	"regexp"
	"strings"

	"github.com/polite-go/polite/guard"
)

// guardFile is a `polite guard --config` file.
type guardFile struct {
	TrustedProxies  []string    `toml:"trusted_proxies"`
	ProxyHeader     string      `toml:"proxy_header"`
	IPv4Prefix      int         `toml:"ipv4_prefix"`
	IPv6Prefix      int         `toml:"ipv6_prefix"`
	UserHeader      string      `toml:"user_header"`
	TenantHeader    string      `toml:"tenant_header"`
	DryRun          bool        `toml:"dry_run"`
	AdvertiseGlobal bool        `toml:"advertise_global"`
	MaxKeys         int         `toml:"max_keys"`
	Secret          string      `toml:"secret"`
	Outage          string      `toml:"outage"`
	Identity        *guardLimit `toml:"identity"`
	Tenant          *guardLimit `toml:"tenant"`
	Global          *guardLimit `toml:"global"`
	Cost            []guardCost `toml:"cost"`
}

type guardLimit struct {
	Rate  float64 `toml:"rate"`
	Burst int     `toml:"burst"`
	Name  string  `toml:"name"`
}

type guardCost struct {
	Pattern string `toml:"pattern"`
	Cost    *int   `toml:"cost"`
}

const guardConfigHelp = `A --config file (TOML); every key is optional:

  trusted_proxies = ["10.0.0.0/8"]   # peers whose X-Forwarded-For is read
  proxy_header = "X-Forwarded-For"   # or "Forwarded"
  ipv6_prefix = 64                   # group IPv6 clients by this prefix
  ipv4_prefix = 32
  user_header = "X-User"             # set by a trusted auth proxy
  tenant_header = "X-Tenant"
  dry_run = false                    # count refusals, refuse nothing
  advertise_global = false
  max_keys = 262144                  # in-memory buckets kept at most
  secret = "…"                       # keys the RateLimit pk hash; share it in a fleet
  outage = "local"                   # with --redis: local, closed or open

  [identity]                         # per user, else per client address
  rate = 10                          # tokens per second
  burst = 20
  name = "identity"                  # the policy's name in the RateLimit fields

  [tenant]                           # per tenant (tenant_header)
  rate = 100
  burst = 200

  [global]                           # everyone
  rate = 1000
  burst = 2000

  [[cost]]                           # tokens a route takes (1 if unmatched)
  pattern = "POST /upload"           # a net/http ServeMux pattern
  cost = 10`

// loadGuardConfig reads a guard config file into c; errors name the file
// and line.
func loadGuardConfig(name string, c *guard.Config) (outage string, err error) {
	src, err := os.ReadFile(name)
	if err != nil {
		return "", fmt.Errorf("--config: %w", err)
	}
	return parseGuardConfig(name, src, c)
}

func parseGuardConfig(name string, src []byte, c *guard.Config) (outage string, err error) {
	var f guardFile
	md, err := decodeTOML(name, src, &f)
	if err != nil {
		// A type mismatch in a table ("identity.rate") says its line
		// itself, where decodeTOML finds only top-level keys.
		if m := tomlLine.FindStringSubmatch(err.Error()); m != nil {
			return "", fmt.Errorf("%s:%s: %s", name, m[1], m[2])
		}
		return "", err
	}
	if und := md.Undecoded(); len(und) > 0 {
		k := und[0]
		table := ""
		if len(k) > 1 {
			table = k[0]
		}
		return "", fmt.Errorf("%s:%d: unknown key %q (see polite guard --help)", name, lineInTable(src, table, k[len(k)-1], -1), k.String())
	}
	*c = guard.Config{TrustedProxies: f.TrustedProxies, ProxyHeader: f.ProxyHeader, IPv4Prefix: f.IPv4Prefix,
		IPv6Prefix: f.IPv6Prefix, UserHeader: f.UserHeader, TenantHeader: f.TenantHeader, DryRun: f.DryRun,
		AdvertiseGlobal: f.AdvertiseGlobal, MaxKeys: f.MaxKeys}
	if f.Secret != "" {
		c.Secret = []byte(f.Secret)
	}
	for _, l := range []struct {
		from *guardLimit
		to   *guard.Limit
	}{{f.Identity, &c.Identity}, {f.Tenant, &c.Tenant}, {f.Global, &c.Global}} {
		if l.from != nil {
			*l.to = guard.Limit{Rate: l.from.Rate, Burst: l.from.Burst, Name: l.from.Name}
		}
	}
	for i, cost := range f.Cost {
		switch {
		case cost.Pattern == "":
			return "", fmt.Errorf("%s:%d: [[cost]] %d has no pattern = \"METHOD /path\"", name, lineOfNthTable(src, "cost", i), i+1)
		case cost.Cost == nil:
			return "", fmt.Errorf("%s:%d: [[cost]] %q has no cost = N", name, lineOfNthTable(src, "cost", i), cost.Pattern)
		}
		if c.Costs == nil {
			c.Costs = map[string]int{}
		}
		if _, dup := c.Costs[cost.Pattern]; dup {
			return "", fmt.Errorf("%s:%d: pattern %q given twice", name, lineInTable(src, "cost", "pattern", i), cost.Pattern)
		}
		c.Costs[cost.Pattern] = *cost.Cost
	}
	if f.Outage != "" && f.Outage != "local" && f.Outage != "closed" && f.Outage != "open" {
		return "", fmt.Errorf("%s:%d: outage %q: want local, closed or open", name, lineInTable(src, "", "outage", -1), f.Outage)
	}
	if _, err := guard.New(*c); err != nil {
		return "", fmt.Errorf("%s:%d: %v", name, guardErrorLine(src, c, err), strings.TrimPrefix(err.Error(), "guard: "))
	}
	return f.Outage, nil
}

// guardSettings map the settings guard.New names in its errors to where
// they are in a config file: table ("" top level) and key.
var guardSettings = []struct{ word, table, key string }{
	{"TrustedProxies", "", "trusted_proxies"},
	{"ProxyHeader", "", "proxy_header"},
	{"UserHeader", "", "user_header"},
	{"TenantHeader", "", "tenant_header"},
	{"IPv4Prefix", "", "ipv4_prefix"},
	{"IPv6Prefix", "", "ipv6_prefix"},
	{"MaxKeys", "", "max_keys"},
	{"identity rate", "identity", "rate"},
	{"identity burst", "identity", "burst"},
	{"identity name", "identity", "name"},
	{"tenant rate", "tenant", "rate"},
	{"tenant burst", "tenant", "burst"},
	{"tenant name", "tenant", "name"},
	{"global rate", "global", "rate"},
	{"global burst", "global", "burst"},
	{"global name", "global", "name"},
}

var sharedName = regexp.MustCompile(`levels \w+ and (\w+) share`)

// guardErrorLine finds the line of the setting a guard.New error names.
func guardErrorLine(src []byte, c *guard.Config, err error) int {
	msg := err.Error()
	if m := sharedName.FindStringSubmatch(msg); m != nil {
		return lineInTable(src, m[1], "name", -1)
	}
	if strings.Contains(msg, "Costs") {
		i := 0
		for _, m := range regexp.MustCompile(`(?m)^\s*pattern\s*=\s*(.*)$`).FindAllSubmatch(src, -1) {
			if strings.Contains(msg, strings.TrimSpace(string(m[1]))) {
				return lineInTable(src, "cost", "pattern", i)
			}
			i++
		}
	}
	for _, s := range guardSettings {
		if strings.Contains(msg, s.word) {
			return lineInTable(src, s.table, s.key, -1)
		}
	}
	return 1
}

var tomlLine = regexp.MustCompile(`^[^:]*:\d+: toml: line (\d+) (.*)$`)

var tableLine = regexp.MustCompile(`^\s*\[\[?\s*([A-Za-z0-9_.-]+)\s*\]\]?`)

// lineInTable returns the line setting key in table ("" the top level;
// for an array of tables, its i-th, or any when i < 0), else the table's
// header line, else 1.
func lineInTable(src []byte, table, key string, i int) int {
	n, cur, seen, header := 0, "", -1, 1
	sc := bufio.NewScanner(bytes.NewReader(src))
	for sc.Scan() {
		n++
		line := sc.Text()
		if m := tableLine.FindStringSubmatch(line); m != nil {
			cur = m[1]
			if cur == table {
				if seen++; i < 0 || seen == i {
					header = n
				}
			}
			continue
		}
		if cur != table || (i >= 0 && seen != i) {
			continue
		}
		k, _, ok := strings.Cut(line, "=")
		if ok && strings.Trim(strings.TrimSpace(k), `"'`) == key {
			return n
		}
	}
	return header
}

// Package politeness is polite's politeness benchmark: it runs rate policies
// against the testbed's standard scenarios and measures, from the hosts'
// own records, how much of each host's hidden capacity a policy used and
// how often it made the host refuse.
package politeness

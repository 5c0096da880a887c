package crawl

import (
	"fmt"
	"strconv"
	"strings"
)

// Lane is a URL's priority within its host's budget (issue 31, item 4).
// A host's lanes share its budget: whenever the host may send, the next URL
// comes from its non-empty lanes in a weighted round-robin, interactive 6,
// normal 3, bulk 1 (asynq's default weights; see
// ../shared/research/next-wave.md §2.3), so interactive URLs go first but
// bulk ones are slowed, never starved. Within a lane URLs go in the order
// they were added, a retry at the front. Lanes order URLs within a host
// only: a host's budget and the order hosts take turns are unchanged.
//
// The zero value is LaneNormal. Its numbers are those of state.db's lane
// column and of redisstore.Lane.
type Lane uint8

// The lanes.
const (
	LaneNormal      Lane = iota // the default
	LaneInteractive             // someone is waiting for it
	LaneBulk                    // background work
	numLanes
)

// laneWeights are the lanes' shares of a host's turns: 6:3:1.
var laneWeights = [numLanes]int{LaneNormal: 3, LaneInteractive: 6, LaneBulk: 1}

// laneTurns is one round of the weighted round-robin, spread out (the
// order smooth weighted round-robin gives for 6:3:1) so that no lane waits
// for another's run of turns. A host keeps its place in it (host.turn) and
// passes over the turns of lanes with nothing queued, so any two non-empty
// lanes share a round in the ratio of their weights.
var laneTurns = [...]Lane{
	LaneInteractive, LaneNormal, LaneInteractive, LaneInteractive, LaneNormal,
	LaneInteractive, LaneBulk, LaneInteractive, LaneNormal, LaneInteractive,
}

// ParseLane parses "interactive", "normal" or "bulk" (in any case).
func ParseLane(s string) (Lane, error) {
	switch strings.ToLower(s) {
	case "interactive":
		return LaneInteractive, nil
	case "normal":
		return LaneNormal, nil
	case "bulk":
		return LaneBulk, nil
	}
	return LaneNormal, fmt.Errorf("crawl: unknown lane %q (want interactive, normal or bulk)", s)
}

// String returns the lane's name, as ParseLane reads it.
func (l Lane) String() string {
	switch l {
	case LaneInteractive:
		return "interactive"
	case LaneNormal:
		return "normal"
	case LaneBulk:
		return "bulk"
	}
	return "lane(" + strconv.Itoa(int(l)) + ")"
}

// MarshalText returns the lane's name; a lane out of range is an error.
func (l Lane) MarshalText() ([]byte, error) {
	if l >= numLanes {
		return nil, fmt.Errorf("crawl: unknown lane %d", l)
	}
	return []byte(l.String()), nil
}

// UnmarshalText parses a lane's name as ParseLane does, so that a Lane may
// be a flag (flag.TextVar) or a JSON string.
func (l *Lane) UnmarshalText(b []byte) error {
	v, err := ParseLane(string(b))
	if err != nil {
		return err
	}
	*l = v
	return nil
}

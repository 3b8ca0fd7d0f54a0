package classic

import (
	"errors"
	"testing"
	"time"

	"github.com/lockd/lockd/internal/mux"
)

func TestRank_TrailingNumber(t *testing.T) {
	cases := []struct {
		id   string
		want int
		err  error
	}{
		{"n1", 1, nil},
		{"n16", 16, nil},
		{"node-3", 3, nil},
		{"n01", 1, nil},
		{"7", 7, nil},
		{"n", 0, ErrBadNodeID},
		{"", 0, ErrBadNodeID},
		{"n1x", 0, ErrBadNodeID},
		{"n1234567890", 0, ErrBadNodeID},
	}
	for _, tc := range cases {
		got, err := Rank(tc.id)
		if got != tc.want || !errors.Is(err, tc.err) {
			t.Errorf("Rank(%q) = %d, %v; want %d, %v", tc.id, got, err, tc.want, tc.err)
		}
	}
}

func TestParseAlgorithm_Names(t *testing.T) {
	cases := []struct {
		in   string
		want Algorithm
		err  error
	}{
		{"ring", Ring, nil},
		{" Bully ", Bully, nil},
		{"INVITATION", Invitation, nil},
		{"raft", "", ErrUnknownAlgorithm},
		{"", "", ErrUnknownAlgorithm},
	}
	for _, tc := range cases {
		got, err := ParseAlgorithm(tc.in)
		if got != tc.want || !errors.Is(err, tc.err) {
			t.Errorf("ParseAlgorithm(%q) = %q, %v; want %q, %v", tc.in, got, err, tc.want, tc.err)
		}
	}
}

func TestAlgorithm_ProtoIsMuxByte(t *testing.T) {
	want := map[Algorithm]byte{Ring: mux.ProtoRing, Bully: mux.ProtoBully, Invitation: mux.ProtoInvitation, Emergent: mux.ProtoEmergent}
	for _, a := range Algorithms {
		if a.Proto() != want[a] {
			t.Errorf("%s.Proto() = %d, want %d", a, a.Proto(), want[a])
		}
		if kinds := a.Kinds(); len(kinds) == 0 || !kinds[len(kinds)-1].heartbeat() {
			t.Errorf("%s.Kinds() = %v, want heartbeats last", a, kinds)
		}
	}
	if Algorithm("raft").Proto() != 0 {
		t.Errorf("unknown algorithm has a protocol byte")
	}
}

func TestConfig_Validate(t *testing.T) {
	valid := func() Config {
		c := DefaultConfig()
		c.ID, c.Members = "n2", []string{"n3", "n1", "n2"}
		return c
	}
	cases := []struct {
		name   string
		change func(*Config)
		err    error
	}{
		{"valid", func(*Config) {}, nil},
		{"unknown algorithm", func(c *Config) { c.Algorithm = "raft" }, ErrUnknownAlgorithm},
		{"no members", func(c *Config) { c.Members = nil }, ErrInvalidConfig},
		{"id not a member", func(c *Config) { c.ID = "n4" }, ErrInvalidConfig},
		{"member without rank", func(c *Config) { c.Members = append(c.Members, "leader") }, ErrBadNodeID},
		{"two members, one rank", func(c *Config) { c.Members = append(c.Members, "n01") }, ErrInvalidConfig},
		{"zero heartbeat", func(c *Config) { c.HeartbeatInterval = 0 }, ErrInvalidConfig},
		{"negative merge delay", func(c *Config) { c.MergeDelay = -time.Second }, ErrInvalidConfig},
		{"suspect before a heartbeat is due", func(c *Config) { c.SuspectTimeout = c.HeartbeatInterval }, ErrInvalidConfig},
		{"T' not above T", func(c *Config) { c.CoordinatorTimeout = c.AnswerTimeout }, ErrInvalidConfig},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			c := valid()
			tc.change(&c)
			err := c.Validate()
			if !errors.Is(err, tc.err) || (tc.err == nil) != (err == nil) {
				t.Errorf("Validate() = %v, want %v", err, tc.err)
			}
		})
	}
}

func TestSimConfig_Validate(t *testing.T) {
	cases := []struct {
		name   string
		change func(*SimConfig)
		err    error
	}{
		{"valid", func(*SimConfig) {}, nil},
		{"no nodes", func(c *SimConfig) { c.N = 0 }, ErrInvalidConfig},
		{"delays reversed", func(c *SimConfig) { c.MinDelay = c.MaxDelay + 1 }, ErrInvalidConfig},
		{"zero delay", func(c *SimConfig) { c.MinDelay = 0 }, ErrInvalidConfig},
		{"drop everything", func(c *SimConfig) { c.DropRate = 1 }, ErrInvalidConfig},
		{"unknown coordinator", func(c *SimConfig) { c.Coordinator = "n9" }, ErrUnknownNode},
		{"unknown crashed node", func(c *SimConfig) { c.Crashed = []string{"x1"} }, ErrUnknownNode},
		{"bad timing", func(c *SimConfig) { c.Timing.ReplyTimeout = 0 }, ErrInvalidConfig},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			c := DefaultSimConfig(Ring, 3, 1)
			tc.change(&c)
			_, err := NewSim(c)
			if !errors.Is(err, tc.err) || (tc.err == nil) != (err == nil) {
				t.Errorf("NewSim() = %v, want %v", err, tc.err)
			}
		})
	}
}

func TestNewNode_RejectsBadInput(t *testing.T) {
	c := DefaultConfig()
	c.ID, c.Members = "n1", []string{"n1", "n2"}
	if _, err := NewNode(c, nil); !errors.Is(err, ErrInvalidConfig) {
		t.Errorf("nil transport: %v, want ErrInvalidConfig", err)
	}
	c.ID = "n3"
	if _, err := NewNode(c, NewMuxTransport(nil, nil, nil)); !errors.Is(err, ErrInvalidConfig) {
		t.Errorf("bad config: %v, want ErrInvalidConfig", err)
	}
}

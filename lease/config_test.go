package lease

import (
	"strings"
	"testing"
	"time"
)

func validConfig() Config {
	c := DefaultConfig()
	c.ID, c.DataDir, c.PeerAddr = "n1", "/tmp/x", "127.0.0.1:7401"
	return c
}

func TestConfig_Validate(t *testing.T) {
	tests := []struct {
		name   string
		change func(*Config)
		want   string // substring of the error; "" = valid
	}{
		{"defaults", func(*Config) {}, ""},
		{"no id", func(c *Config) { c.ID = "" }, "ID is required"},
		{"no data", func(c *Config) { c.DataDir = "" }, "DataDir"},
		{"no peer", func(c *Config) { c.PeerAddr = "" }, "PeerAddr"},
		{"unknown log store", func(c *Config) { c.LogStore = "leveldb" }, "LogStore"},
		{"wal", func(c *Config) { c.LogStore = LogStoreWAL }, ""},
		{"boltdb", func(c *Config) { c.LogStore = LogStoreBolt }, ""},
		{"tiny heartbeat", func(c *Config) { c.HeartbeatTimeout = time.Millisecond }, "HeartbeatTimeout"},
		{"election below heartbeat", func(c *Config) { c.ElectionTimeout = 100 * time.Millisecond }, "ElectionTimeout"},
		{"leader lease above heartbeat", func(c *Config) { c.LeaderLeaseTimeout = time.Second }, "LeaderLeaseTimeout"},
		{"drift too large", func(c *Config) { c.MaxClockDrift = 0.6 }, "MaxClockDrift"},
		{"margin eats lease", func(c *Config) { c.LeaseMargin = time.Second }, "no master lease"},
		{"no blocking queries", func(c *Config) { c.MaxBlockingQueries = 0 }, "MaxBlockingQueries"},
		{"join and initial", func(c *Config) {
			c.Join = "http://x"
			c.InitialCluster = []Peer{{ID: "n1", Addr: "a:1"}}
		}, "exclusive"},
		{"initial without self", func(c *Config) { c.InitialCluster = []Peer{{ID: "n2", Addr: "a:1"}} }, "does not include"},
		{"initial duplicate", func(c *Config) {
			c.InitialCluster = []Peer{{ID: "n1", Addr: "a:1"}, {ID: "n1", Addr: "a:2"}}
		}, "twice"},
		{"initial member without address", func(c *Config) { c.InitialCluster = []Peer{{ID: "n1"}} }, "no id or address"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := validConfig()
			tt.change(&c)
			err := c.Validate()
			switch {
			case tt.want == "" && err != nil:
				t.Fatalf("Validate() = %v, want nil", err)
			case tt.want != "" && (err == nil || !strings.Contains(err.Error(), tt.want)):
				t.Fatalf("Validate() = %v, want an error containing %q", err, tt.want)
			}
		})
	}
}

func TestConfig_LeaseDurationIsShorterThanHeartbeat(t *testing.T) {
	c := validConfig()
	got := c.leaseDuration()
	want := time.Duration(float64(c.HeartbeatTimeout)*(1-c.MaxClockDrift)) - c.LeaseMargin
	if got != want || got >= c.HeartbeatTimeout {
		t.Fatalf("leaseDuration = %v, want %v (< HeartbeatTimeout %v)", got, want, c.HeartbeatTimeout)
	}
}

func TestNew_RequiresStream(t *testing.T) {
	if _, err := New(validConfig()); err == nil || !strings.Contains(err.Error(), "Stream") {
		t.Fatalf("New without Stream = %v, want an error naming Stream", err)
	}
}

package httpapi

import (
	"net/http"
	"strings"
	"testing"
	"time"
)

// fakeClock is a ClockSkewer that records what it was set to.
type fakeClock struct {
	offset time.Duration
	rate   float64
}

func (c *fakeClock) Set(offset time.Duration, rate float64) { c.offset, c.rate = offset, rate }
func (c *fakeClock) Skew() (time.Duration, float64)         { return c.offset, c.rate }

func TestClock_OnlyWhenEnabled(t *testing.T) {
	srv := mustNewServer(t, newLeaderFake(), nil)
	if rec := serve(srv, "GET", "/v1/debug/clock", ""); rec.Code != http.StatusNotFound {
		t.Fatalf("clock route without a ClockSkewer: %d, want 404", rec.Code)
	}
}

func TestClock_Routes(t *testing.T) {
	tests := []struct {
		name, method, body string
		status             int
		wantBody           string
		wantOffset         time.Duration
		wantRate           float64
	}{
		{"read", "GET", "", 200, `{"offset":"0s","rate":1}`, 0, 1},
		{"set", "POST", `{"offset":"-2s","rate":1.5}`, 200, `{"offset":"-2s","rate":1.5}`, -2 * time.Second, 1.5},
		{"rate defaults to 1", "POST", `{"offset":"1s"}`, 200, `"rate":1`, time.Second, 1},
		{"bad offset", "POST", `{"offset":"soon"}`, 400, "bad duration", 0, 1},
		{"negative rate", "POST", `{"rate":-1}`, 400, "out of range", 0, 1},
		{"unknown field", "POST", `{"skew":"1s"}`, 400, "unknown field", 0, 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			clock := &fakeClock{rate: 1}
			cfg := testConfig(t, newLeaderFake())
			cfg.Clock = clock
			rec := serve(New(cfg), tt.method, "/v1/debug/clock", tt.body)
			if rec.Code != tt.status || !strings.Contains(rec.Body.String(), tt.wantBody) {
				t.Fatalf("got %d %s, want %d with %s", rec.Code, rec.Body, tt.status, tt.wantBody)
			}
			if clock.offset != tt.wantOffset || clock.rate != tt.wantRate {
				t.Fatalf("clock set to %v x%v, want %v x%v", clock.offset, clock.rate, tt.wantOffset, tt.wantRate)
			}
		})
	}
}

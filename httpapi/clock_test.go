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
	step   time.Duration
}

func (c *fakeClock) Set(offset time.Duration, rate float64) { c.offset, c.rate = offset, rate }
func (c *fakeClock) Skew() (time.Duration, float64)         { return c.offset, c.rate }
func (c *fakeClock) SetWallStep(step time.Duration)         { c.step = step }
func (c *fakeClock) WallStep() time.Duration                { return c.step }

func TestClock_OnlyWhenEnabled(t *testing.T) {
	srv := mustNewServer(t, newLeaderFake(), nil)
	if rec := serve(srv, "GET", "/v1/debug/clock", ""); rec.Code != http.StatusNotFound {
		t.Fatalf("clock route without a ClockSkewer: %d, want 404", rec.Code)
	}
}

func TestClock_Routes(t *testing.T) {
	// Each case starts from a clock 5s ahead at rate 2 with a wall step of
	// 1h, so that "unchanged" and "reset" tell apart.
	const (
		off0  = 5 * time.Second
		rate0 = 2.0
		step0 = time.Hour
	)
	tests := []struct {
		name, method, body string
		status             int
		wantBody           string
		wantOffset         time.Duration
		wantRate           float64
		wantStep           time.Duration
	}{
		{"read", "GET", "", 200, `{"offset":"5s","rate":2,"wall_step":"1h0m0s"}`, off0, rate0, step0},
		{"set", "POST", `{"offset":"-2s","rate":1.5}`, 200, `{"offset":"-2s","rate":1.5,"wall_step":"1h0m0s"}`, -2 * time.Second, 1.5, step0},
		{"rate defaults to 1", "POST", `{"offset":"1s"}`, 200, `"rate":1`, time.Second, 1, step0},
		{"offset defaults to 0", "POST", `{"rate":3}`, 200, `"offset":"0s"`, 0, 3, step0},
		{"wall step alone", "POST", `{"wall_step":"-3h"}`, 200, `{"offset":"5s","rate":2,"wall_step":"-3h0m0s"}`, off0, rate0, -3 * time.Hour},
		{"wall step undone", "POST", `{"wall_step":"0s"}`, 200, `"wall_step":"0s"`, off0, rate0, 0},
		{"all three", "POST", `{"offset":"1s","rate":1,"wall_step":"24h"}`, 200, `{"offset":"1s","rate":1,"wall_step":"24h0m0s"}`, time.Second, 1, 24 * time.Hour},
		{"wall step at the bound", "POST", `{"wall_step":"-1000h"}`, 200, `"wall_step":"-1000h0m0s"`, off0, rate0, -1000 * time.Hour},
		{"wall step too far ahead", "POST", `{"wall_step":"1001h"}`, 400, "wall_step", off0, rate0, step0},
		{"wall step too far behind", "POST", `{"offset":"1s","wall_step":"-1001h"}`, 400, "wall_step", off0, rate0, step0},
		{"bad wall step", "POST", `{"wall_step":"later"}`, 400, "bad duration", off0, rate0, step0},
		{"bad offset", "POST", `{"offset":"soon"}`, 400, "bad duration", off0, rate0, step0},
		{"negative rate", "POST", `{"rate":-1,"wall_step":"1s"}`, 400, "out of range", off0, rate0, step0},
		{"unknown field", "POST", `{"skew":"1s"}`, 400, "unknown field", off0, rate0, step0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			clock := &fakeClock{offset: off0, rate: rate0, step: step0}
			cfg := testConfig(t, newLeaderFake())
			cfg.Clock = clock
			rec := serve(New(cfg), tt.method, "/v1/debug/clock", tt.body)
			if rec.Code != tt.status || !strings.Contains(rec.Body.String(), tt.wantBody) {
				t.Fatalf("got %d %s, want %d with %s", rec.Code, rec.Body, tt.status, tt.wantBody)
			}
			if clock.offset != tt.wantOffset || clock.rate != tt.wantRate || clock.step != tt.wantStep {
				t.Fatalf("clock set to %v x%v step %v, want %v x%v step %v",
					clock.offset, clock.rate, clock.step, tt.wantOffset, tt.wantRate, tt.wantStep)
			}
		})
	}
}

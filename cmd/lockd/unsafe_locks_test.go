package main

import "testing"

func TestServeFlags_LockUnsafeSwitches(t *testing.T) {
	f, err := parseServe(t, []string{"--unsafe-debug", "lower-token,early-lock-delay,break-fifo"}, nil)
	if err != nil {
		t.Fatal(err)
	}
	logger, _ := f.logger()
	cfg, err := f.config(logger)
	if err != nil {
		t.Fatal(err)
	}
	if u := cfg.Node.Unsafe; !u.LowerToken || !u.EarlyLockDelay || !u.BreakFIFO {
		t.Fatalf("switches not all set: %+v", u)
	}
}

// Package ctxsleep is a sleep that a context can cut short.
package ctxsleep

import (
	"context"
	"time"
)

// Sleep waits d, or until ctx ends; it returns ctx's error in the second
// case and nil in the first.
func Sleep(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
		return nil
	}
}

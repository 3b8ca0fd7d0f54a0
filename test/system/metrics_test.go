package system

import (
	"io"
	"strings"
	"testing"
	"time"
)

// The binary serves /metrics with the Go runtime's metrics and
// hashicorp/raft's own, bridged from go-metrics, beside lockd's.
func TestMetrics_BinaryServesRaftAndRuntime(t *testing.T) {
	c := mustStartCluster(t, 1)
	newSession(t, c.procs[0].http, 10*time.Second)
	waitFor(t, 10*time.Second, "raft's commit time in /metrics", func() bool {
		resp, err := httpClient.Get(c.procs[0].http + "/metrics")
		if err != nil {
			return false
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		text := string(b)
		return strings.Contains(text, "\nlockd_raft_commitTime_count ") && strings.Contains(text, "\ngo_goroutines ") &&
			strings.Contains(text, "\nlockd_leader 1\n") && strings.Contains(text, "\nlockd_sessions_created_total 1\n")
	})
}

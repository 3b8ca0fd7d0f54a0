// Copyright IBM Corp. 2013, 2025
// SPDX-License-Identifier: MPL-2.0

package raft

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// With NotifyFollowersOfCommit, followers apply an entry as soon as the
// leader commits it, though no entry follows it and CommitTimeout is far
// off: the leader sends them the new commit index at once. Without it they
// would wait for CommitTimeout (3 s here, and its random timer up to twice
// that) or the next entry. (The test cluster waits CommitTimeout for a
// stable leader, which bounds how long it can be.)
func TestNotifyFollowersOfCommit_FollowersApplyWithoutAnotherEntry(t *testing.T) {
	conf := inmemConfig(t)
	conf.NotifyFollowersOfCommit = true
	conf.CommitTimeout = 3 * time.Second
	c := MakeCluster(3, t, conf)
	defer c.Close()
	leader := c.Leader()
	for _, v := range []string{"a", "b"} {
		require.NoError(t, leader.Apply([]byte(v), time.Second).Error())
		for _, f := range c.Followers() {
			m := getMockFSM(c.fsms[c.IndexOf(f)])
			require.Eventually(t, func() bool {
				logs := m.Logs()
				return len(logs) > 0 && string(logs[len(logs)-1]) == v
			}, time.Second, time.Millisecond, "follower %v did not apply %q", f, v)
		}
	}
}

package lease

import "time"

// PromiseFor exposes a node's answer to the lease exchange to the external
// tests of this package.
func (n *Node) PromiseFor(term uint64, leader string) time.Duration {
	return n.raft.promise(term, leader)
}

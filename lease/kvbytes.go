package lease

import (
	"context"

	"github.com/lockd/lockd/api"
	"github.com/lockd/lockd/fsm"
)

// The namespace with byte keys, for a layer that speaks another protocol
// (the etcd v3 API, package etcdapi). KV, PutKV and the rest take keys as
// the HTTP API names them and check them by its rule for names
// (api.ValidateKey); these take any key the state machine stores (1 to
// fsm.MaxKeyLen bytes), which the state machine itself checks, so the
// HTTP API's rule is neither loosened nor bypassed by them.

// ReadNamespace runs fn as a read of the state, on the read path every
// GET takes (reads.go): with stale set on any node from its own state;
// otherwise on the leader only, and the answer stands only if the master
// lease still held after fn read the state (no_leader otherwise, and what
// fn read must be thrown away). fn reads through FSM and must not block.
func (n *Node) ReadNamespace(ctx context.Context, stale bool, fn func()) error {
	_, err := read(ctx, n, api.ReadOptions{Stale: stale}, fsm.AppliedTopic(), n.fsm.AppliedIndex, func() struct{} {
		fn()
		return struct{}{}
	})
	return err
}

// CommitTxn commits the transaction t with byte keys on the leader, as
// Txn does one the HTTP API checked: refusals the state tells in advance
// are answered without an entry, others with the entry's. owner is the
// accessor id of the ACL token that writes ("" with ACLs off): the keys
// it writes count against that token's limits, as over HTTP. It returns
// the result and the entry's index. what names the write in messages.
func (n *Node) CommitTxn(ctx context.Context, owner string, t *fsm.Txn, what string) (*fsm.TxnResult, uint64, error) {
	return n.commitTxn(ctx, fsm.Command{Op: fsm.OpTxn, Txn: t, Owner: owner}, kvWhat+" ("+what+")")
}

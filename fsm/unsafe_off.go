//go:build !lockd_unsafe

package fsm

// A default build (without the lockd_unsafe tag) has no unsafe switches:
// every hook below is a constant or the identity, which the compiler
// inlines and folds away, so that nothing in a production binary can break
// a guarantee of the state machine. The switches and what they do are in
// unsafe_on.go, built only for the fault harness.

// unsafeSwitches is empty: there is nothing to set.
type unsafeSwitches struct{}

func (unsafeSwitches) grantHeld() bool                     { return false }
func (unsafeSwitches) forgetSeq() bool                     { return false }
func (unsafeSwitches) refuseRepeat() bool                  { return false }
func (unsafeSwitches) grantToken(index uint64) uint64      { return index }
func (unsafeSwitches) skipHead(*space, *Lock, uint64) bool { return false }
func (unsafeSwitches) nextWaiter(*Lock) int                { return 0 }
func (unsafeSwitches) shortenLockDelays([]Timer)           {}
func (unsafeSwitches) kvForgetSeq() bool                   { return false }
func (unsafeSwitches) staleGuard(Guard) bool               { return false }
func (unsafeSwitches) keepEphemeral(*KV) bool              { return false }

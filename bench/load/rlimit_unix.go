//go:build linux || darwin

package load

import "syscall"

// raiseOpenFiles raises this process's soft limit of open files to want,
// or as near it as the hard limit allows, and returns the soft limit
// before and after.
func raiseOpenFiles(want uint64) (before, after uint64, err error) {
	var lim syscall.Rlimit
	if err := syscall.Getrlimit(syscall.RLIMIT_NOFILE, &lim); err != nil {
		return 0, 0, err
	}
	before = lim.Cur
	if lim.Cur >= want || lim.Cur >= lim.Max {
		return before, before, nil
	}
	lim.Cur = min(want, lim.Max)
	if err := syscall.Setrlimit(syscall.RLIMIT_NOFILE, &lim); err != nil {
		return before, before, err
	}
	return before, lim.Cur, nil
}

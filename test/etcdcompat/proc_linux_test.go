package etcdcompat

import "syscall"

// childAttr has a child process killed when the test binary ends, should
// it end before its cleanups ran (a panic, a -timeout).
func childAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
}

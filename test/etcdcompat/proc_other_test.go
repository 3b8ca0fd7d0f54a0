//go:build !linux

package etcdcompat

import "syscall"

// childAttr: only Linux has a parent-death signal; elsewhere children
// end by the tests' cleanups.
func childAttr() *syscall.SysProcAttr { return nil }

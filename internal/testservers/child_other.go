//go:build unix && !linux

package testservers

import "syscall"

// childAttr puts a server process in a process group of its own (no
// parent-death signal outside Linux: t.Cleanup stops it).
func childAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Setpgid: true}
}

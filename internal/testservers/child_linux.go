package testservers

import "syscall"

// childAttr puts a server process in a process group of its own and has
// the kernel kill it when the test binary dies, even by SIGKILL.
func childAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
}

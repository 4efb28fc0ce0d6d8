package main

import (
	"bufio"
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
)

// describeProcess names a process for a message: "process 4242 (noticesd
// demo)", with its command line when /proc shows it, else "process 4242".
func describeProcess(pid int) string {
	s := "process " + strconv.Itoa(pid)
	b, err := os.ReadFile(filepath.Join("/proc", strconv.Itoa(pid), "cmdline"))
	if err != nil || len(b) == 0 {
		return s
	}
	args := strings.Fields(strings.ReplaceAll(string(b), "\x00", " "))
	if len(args) > 0 {
		args[0] = filepath.Base(args[0])
	}
	cmd := strings.Join(args, " ")
	if len(cmd) > 80 {
		cmd = cmd[:77] + "..."
	}
	return s + " (" + cmd + ")"
}

// lockHolder names the process whose pid the lock file at path holds
// (lockfile.Acquire writes it there), or "another process".
func lockHolder(path string) string {
	b, err := os.ReadFile(path)
	if err != nil {
		return "another process"
	}
	pid, err := strconv.Atoi(strings.TrimSpace(string(b)))
	if err != nil || pid <= 0 {
		return "another process"
	}
	return describeProcess(pid)
}

// portHolder names the process listening on TCP port of addr (host:port),
// found through /proc/net/tcp{,6} (the socket's inode) and /proc/*/fd; ""
// when it cannot be found (no /proc, or the process belongs to another
// user).
func portHolder(addr string) string {
	_, p, err := net.SplitHostPort(addr)
	if err != nil {
		return ""
	}
	port, err := strconv.Atoi(p)
	if err != nil || port <= 0 {
		return ""
	}
	inodes := map[string]bool{}
	for _, table := range []string{"/proc/net/tcp", "/proc/net/tcp6"} {
		for _, ino := range listeningInodes(table, port) {
			inodes["socket:["+ino+"]"] = true
		}
	}
	if len(inodes) == 0 {
		return ""
	}
	procs, _ := filepath.Glob("/proc/[0-9]*")
	for _, dir := range procs {
		fds, _ := os.ReadDir(filepath.Join(dir, "fd"))
		for _, fd := range fds {
			if link, err := os.Readlink(filepath.Join(dir, "fd", fd.Name())); err == nil && inodes[link] {
				if pid, err := strconv.Atoi(filepath.Base(dir)); err == nil {
					return describeProcess(pid)
				}
			}
		}
	}
	return ""
}

// listeningInodes returns the inodes of the sockets of a /proc/net/tcp
// table that listen on port.
func listeningInodes(table string, port int) []string {
	f, err := os.Open(table)
	if err != nil {
		return nil
	}
	defer f.Close()
	var out []string
	sc := bufio.NewScanner(f)
	sc.Scan() // the header
	for sc.Scan() {
		// sl local_address rem_address st tx_queue:rx_queue tr:tm->when retrnsmt uid timeout inode
		fields := strings.Fields(sc.Text())
		if len(fields) < 10 || fields[3] != "0A" { // 0A: TCP_LISTEN
			continue
		}
		i := strings.LastIndexByte(fields[1], ':')
		if p, err := strconv.ParseUint(fields[1][i+1:], 16, 16); err == nil && int(p) == port && fields[9] != "0" {
			out = append(out, fields[9])
		}
	}
	return out
}

// listenMessage explains a failed listen on addr (the value of setting),
// naming the process that listens there when it can be found.
func listenMessage(setting, addr string, err error) string {
	// "listen tcp ADDR: bind: address already in use" -> "address already in use".
	var op *net.OpError
	if errors.As(err, &op) {
		err = op.Err
	}
	var sys *os.SyscallError
	if errors.As(err, &sys) {
		err = sys.Err
	}
	who := portHolder(addr)
	if who == "" {
		return fmt.Sprintf("listen on %s: %v; set %s to a free address (for example :8081)", addr, err, setting)
	}
	return fmt.Sprintf("listen on %s: %v: %s listens there; stop it, or set %s to a free address (for example :8081)", addr, err, who, setting)
}

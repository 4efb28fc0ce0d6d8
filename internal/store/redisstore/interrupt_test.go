package redisstore

import (
	"context"
	"crypto/sha1"
	"encoding/hex"
	"errors"
	"sync/atomic"

	"github.com/redis/go-redis/v9"
)

// errKilled answers every command a test's killAt refused.
var errKilled = errors.New("redisstore test: the process was killed before this command")

// onCommand calls before ahead of every command rdb sends from now
// on (a pipeline's too, each of its commands in turn), until the returned
// restore: a non-nil answer is the command's (the whole pipeline's)
// answer, and nothing is sent. before runs on the caller's goroutine: it
// may act there (run a sweep) or block. A store and its test often share
// the client: a test restores before it goes on.
func onCommand(rdb redis.UniversalClient, before func(cmd redis.Cmder) error) (restore func()) {
	h := &commandHook{}
	h.before.Store(&before)
	rdb.AddHook(h)
	return func() { h.before.Store(nil) }
}

// killAt makes rdb refuse, until the returned restore, every
// command from the first that at reports on (that one included): a change
// whose process was killed there has sent none of them, nor any cleanup.
// at runs on every command until then, so it must be safe for concurrent
// use.
func killAt(rdb redis.UniversalClient, at func(cmd redis.Cmder) bool) (restore func()) {
	var killed atomic.Bool
	return onCommand(rdb, func(cmd redis.Cmder) error {
		if killed.Load() || at(cmd) {
			killed.Store(true)
			return errKilled
		}
		return nil
	})
}

// runOf reports whether cmd runs script (EVALSHA, or EVAL of its source).
func runOf(cmd redis.Cmder, script *redis.Script) bool {
	args := cmd.Args()
	if len(args) < 2 {
		return false
	}
	body, _ := args[1].(string)
	switch cmd.Name() {
	case "evalsha":
		return body == script.Hash()
	case "eval":
		sum := sha1.Sum([]byte(body))
		return hex.EncodeToString(sum[:]) == script.Hash()
	}
	return false
}

// runs reports the first command that runs script.
func runs(script *redis.Script) func(redis.Cmder) bool {
	return func(cmd redis.Cmder) bool { return runOf(cmd, script) }
}

// after reports the first command that follows a run of script, other
// than a run of script itself (EVAL after an EVALSHA that found no
// script).
func after(script *redis.Script) func(redis.Cmder) bool {
	var ran atomic.Bool
	return func(cmd redis.Cmder) bool {
		if runOf(cmd, script) {
			ran.Store(true)
			return false
		}
		return ran.Load()
	}
}

// commandHook is onCommand's go-redis hook.
type commandHook struct {
	before atomic.Pointer[func(redis.Cmder) error]
}

func (h *commandHook) DialHook(next redis.DialHook) redis.DialHook { return next }

func (h *commandHook) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		if err := h.check([]redis.Cmder{cmd}); err != nil {
			return err
		}
		return next(ctx, cmd)
	}
}

func (h *commandHook) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return func(ctx context.Context, cmds []redis.Cmder) error {
		if err := h.check(cmds); err != nil {
			return err
		}
		return next(ctx, cmds)
	}
}

// check asks before about each of cmds; on a refusal every one of them
// has that error.
func (h *commandHook) check(cmds []redis.Cmder) error {
	fn := h.before.Load()
	if fn == nil {
		return nil
	}
	for _, c := range cmds {
		if err := (*fn)(c); err != nil {
			for _, c := range cmds {
				c.SetErr(err)
			}
			return err
		}
	}
	return nil
}

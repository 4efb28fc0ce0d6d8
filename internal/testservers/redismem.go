package testservers

import (
	"context"
	"strconv"
	"strings"
	"testing"

	"github.com/redis/go-redis/v9"
)

// UsedMemory returns Redis's INFO memory used_memory: what the whole
// server holds, so measure on a Redis holding nothing else.
func UsedMemory(tb testing.TB, rdb redis.UniversalClient) int64 {
	tb.Helper()
	return RedisInfoInt(tb, rdb, "memory", "used_memory")
}

// RedisInfoInt returns the integer field of INFO section (used_memory,
// used_memory_dataset of memory), failing tb when there is none.
func RedisInfoInt(tb testing.TB, rdb redis.UniversalClient, section, field string) int64 {
	tb.Helper()
	info, err := rdb.Info(context.Background(), section).Result()
	if err != nil {
		tb.Fatal(err)
	}
	for _, line := range strings.Split(info, "\n") {
		if v, ok := strings.CutPrefix(strings.TrimSpace(line), field+":"); ok {
			n, err := strconv.ParseInt(v, 10, 64)
			if err != nil {
				tb.Fatal(err)
			}
			return n
		}
	}
	tb.Fatalf("INFO %s has no %s", section, field)
	return 0
}

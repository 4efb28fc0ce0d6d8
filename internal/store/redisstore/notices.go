package redisstore

import (
	"context"
	"encoding/json"
	"fmt"
	"strconv"

	"github.com/redis/go-redis/v9"

	"noticesd/internal/notice"
)

// The notice side of the bulk screen, kept by the ingester (RecordNotices):
//
//	nids          set of every acn and abn value carried by a notice
//	nid:<value>   set of the notice seqs carrying that acn or abn
//	nsum          hash seq -> the notice without text, practitioners and
//	              source_url (JSON): what the screen's filters and its
//	              latest_notice need

// summary strips a notice to what the screen reads.
func summary(n notice.Notice) notice.Notice {
	n.Text, n.Practitioners, n.SourceURL = "", nil, nil
	return n
}

// RecordNotices records new or amended notices (as stored: Seq set) in the
// screen's identifier sets. Recording the same notice again is harmless; an
// amended notice that changed its acn or abn leaves the old value's set.
func (s *Store) RecordNotices(ctx context.Context, ns []notice.Notice) error {
	for len(ns) > 0 {
		chunk := ns[:min(len(ns), 2000)]
		ns = ns[len(chunk):]
		if err := s.recordNotices(ctx, chunk); err != nil {
			return err
		}
	}
	return nil
}

func (s *Store) recordNotices(ctx context.Context, ns []notice.Notice) error {
	seqs := make([]string, len(ns))
	for i, n := range ns {
		if n.Seq <= 0 {
			return fmt.Errorf("redisstore: record notice %s: it has no notice_seq; record notices as stored", n.ID)
		}
		seqs[i] = strconv.FormatInt(n.Seq, 10)
	}
	old, err := s.hmget(ctx, s.key("nsum"), seqs)
	if err != nil {
		return err
	}
	_, err = s.rdb.Pipelined(ctx, func(p redis.Pipeliner) error {
		for i, n := range ns {
			sum, err := json.Marshal(summary(n))
			if err != nil {
				return err
			}
			now := idents(&n)
			if old[i] != "" {
				var o notice.Notice
				if json.Unmarshal([]byte(old[i]), &o) == nil {
					for _, v := range idents(&o) {
						if v != "" && v != now[0] && v != now[1] {
							p.SRem(ctx, s.key("nid", v), seqs[i])
						}
					}
				}
			}
			for _, v := range now {
				if v != "" {
					p.SAdd(ctx, s.key("nid", v), seqs[i])
					p.SAdd(ctx, s.key("nids"), v)
				}
			}
			p.HSet(ctx, s.key("nsum"), seqs[i], sum)
		}
		return nil
	})
	return s.fail("record notices", err)
}

// idents returns a notice's acn and abn ("" when absent).
func idents(n *notice.Notice) [2]string {
	var out [2]string
	if n.ACN != nil {
		out[0] = *n.ACN
	}
	if n.ABN != nil {
		out[1] = *n.ABN
	}
	return out
}

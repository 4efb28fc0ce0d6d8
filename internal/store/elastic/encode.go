package elastic

import (
	"strconv"

	"github.com/noticesd/noticesd/internal/notice"
	"github.com/noticesd/noticesd/internal/query"
	"github.com/noticesd/noticesd/internal/store/elastic/esdoc"
)

// appendRegisterBlock appends to buf the JSON of a register document
// holding rows, the first of which is row first of the file: row (file
// order orders a company's names), rows (how many), acn, abn and names
// (folded) what reads look up, data the rows. It writes byte for byte what
// encoding/json writes for registerBlock (encode_test.go), without
// reflection: a register load encodes millions of rows on the cores
// Elasticsearch indexes them on. An empty ACN or ABN is left out of acn
// and abn (no read looks one up).
func appendRegisterBlock(buf []byte, first int64, rows []notice.RegisterRow) []byte {
	buf = append(buf, `{"row":`...)
	buf = strconv.AppendInt(buf, first, 10)
	buf = append(buf, `,"rows":`...)
	buf = strconv.AppendInt(buf, int64(len(rows)), 10)
	buf = appendIdents(append(buf, `,"acn":[`...), rows, func(r *notice.RegisterRow) string { return r.ACN })
	buf = appendIdents(append(buf, `],"abn":[`...), rows, func(r *notice.RegisterRow) string { return r.ABN })
	buf = append(buf, `],"names":[`...)
	for i := range rows {
		if i > 0 {
			buf = append(buf, ',')
		}
		buf = esdoc.AppendString(buf, query.Fold(rows[i].CompanyName))
	}
	buf = append(buf, `],"data":[`...)
	for i := range rows {
		if i > 0 {
			buf = append(buf, ',')
		}
		buf = appendRegisterRow(buf, &rows[i])
	}
	return append(buf, "]}"...)
}

// appendIdents appends the non-empty idents of rows as JSON strings, comma
// separated.
func appendIdents(buf []byte, rows []notice.RegisterRow, ident func(*notice.RegisterRow) string) []byte {
	n := 0
	for i := range rows {
		if v := ident(&rows[i]); v != "" {
			if n > 0 {
				buf = append(buf, ',')
			}
			buf = esdoc.AppendString(buf, v)
			n++
		}
	}
	return buf
}

// appendRegisterRow appends the JSON of r as encoding/json writes it.
func appendRegisterRow(buf []byte, r *notice.RegisterRow) []byte {
	buf = esdoc.AppendField(buf, `{"CompanyName":`, r.CompanyName)
	buf = esdoc.AppendField(buf, `,"ACN":`, r.ACN)
	buf = esdoc.AppendField(buf, `,"Type":`, r.Type)
	buf = esdoc.AppendField(buf, `,"Class":`, r.Class)
	buf = esdoc.AppendField(buf, `,"SubClass":`, r.SubClass)
	buf = esdoc.AppendField(buf, `,"Status":`, r.Status)
	buf = esdoc.AppendField(buf, `,"RegisteredOn":`, r.RegisteredOn)
	buf = esdoc.AppendField(buf, `,"DeregisteredOn":`, r.DeregisteredOn)
	buf = esdoc.AppendField(buf, `,"PreviousState":`, r.PreviousState)
	buf = esdoc.AppendField(buf, `,"StateRegistrationNumber":`, r.StateRegistrationNumber)
	buf = esdoc.AppendField(buf, `,"ModifiedSinceLastReport":`, r.ModifiedSinceLastReport)
	buf = esdoc.AppendField(buf, `,"CurrentNameIndicator":`, r.CurrentNameIndicator)
	buf = esdoc.AppendField(buf, `,"ABN":`, r.ABN)
	buf = esdoc.AppendField(buf, `,"CurrentName":`, r.CurrentName)
	buf = esdoc.AppendField(buf, `,"CurrentNameStart":`, r.CurrentNameStart)
	return append(buf, '}')
}

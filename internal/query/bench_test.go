package query

import (
	"strings"
	"testing"
)

// foldBenchTexts are notice-like texts for BenchmarkFold: plain ASCII (most
// notices), Latin letters with diacritics, and other scripts (the slow
// path).
var foldBenchTexts = map[string]string{
	"ascii": strings.Repeat("Notice is hereby given that the creditors of ACME HOLDINGS PTY LTD (ACN 004 085 616) "+
		"resolved on 12 March 2025 that the company be wound up voluntarily and that J. Smith be appointed liquidator. ", 4),
	"latin": strings.Repeat("Société Générale Café Crème Zürich Straße Ærøskøbing Łódź Dvořák naïve façade résumé ", 4),
	"other": strings.Repeat("ΑΘΗΝΑ Μεταφορές Москва Торговый дом 東京商事株式会社 日本語 ΑΒΓ Привет ", 4),
}

func BenchmarkFold(b *testing.B) {
	for _, name := range []string{"ascii", "latin", "other"} {
		s := foldBenchTexts[name]
		b.Run(name, func(b *testing.B) {
			b.SetBytes(int64(len(s)))
			b.ReportAllocs()
			for b.Loop() {
				Fold(s)
			}
		})
	}
}

package meridian

import (
	"context"
	"strings"
	"testing"
	"time"
)

// TestCSVValueThatLooksLikeAKeyTag profiles a CSV column whose values mix numbers and text,
// one of them "o", the tag byte of JSON objects and arrays in the dictionary's keys: CSV keys
// are the text itself (the profile once read past the one-byte key and panicked), and a
// column of numbers and words is a string column.
func TestCSVValueThatLooksLikeAKeyTag(t *testing.T) {
	ds := NewDataset()
	if err := ds.ReadCSV(strings.NewReader("c\n1\no\nabc\n2\n"), ','); err != nil {
		t.Fatal(err)
	}
	res, err := Analyze(context.Background(), Request{SourceID: "tags", Dataset: ds, Now: time.Now()})
	if err != nil {
		t.Fatal(err)
	}
	if got := res.Profile.Columns[0].InferredType; got == nil || *got != "string" {
		t.Fatalf("inferred type %v, want string", *got)
	}
}

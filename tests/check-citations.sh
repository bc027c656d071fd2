#!/bin/sh
# SPDX-License-Identifier: GPL-2.0-or-later
# Every citation of the format reference in the sources must name a
# section heading that exists (doc/README.md: "Citing").
#
# Citations found (in format/ libimage/ include/ cmd/ tests/ fuzz/
# bench/ man/ doc/ .ci/ and the top-level sources):
#   doc/NAME.md SECTION-SIGN N.M   and lists after it: ", SIGN N.M",
#                                  " and SIGN N.M", "/SIGN N.M"
#   SIGN N.M without a file name   the file named last before it in the
#                                  same file (doc/format.md if none);
#                                  inside doc/ the file itself
#   format map SIGN N.M, format map [section[s]] N.M[, N.M...],
#   and "section[s] N.M[, ...]" in C sources: the legacy forms, all
#                                  meaning doc/format.md
# (SIGN is the section sign; written out here so that this file does
# not cite anything itself.)
#
# A section exists when the doc has a heading line "## N Title" (one
# more '#' than N has dot-separated numbers); headings must be unique.
#
# TAP output. Usage: check-citations.sh [TOP]; TOP defaults to
# $top_srcdir, else the folder above this script. A self-test first
# runs the checker on a scratch tree with one missing section and
# requires it to fail, so this test cannot pass vacuously.
set -u

top=${1:-${top_srcdir:-$(dirname "$0")/..}}

if ! command -v perl >/dev/null 2>&1; then
	echo "1..1"
	echo "not ok 1 - perl is needed to check citations"
	exit 1
fi

# check TOP: print "FILE:LINE: problem" lines, exit 1 if any, and a
# summary line "# N citations in M files" on stdout.
check() {
	perl -e '
use strict;
use warnings;
use File::Find;

my $top = shift;
my $sign = "\xc2\xa7";		# the section sign, UTF-8
my $num = qr/\d+(?:\.\d+)*/;
my $listsep = qr/\s*(?:,|\band\b|\bor\b|\/)\s*/;
my @dirs = qw(format libimage include cmd tests fuzz bench man doc .ci);
my @topfiles = qw(README.md Makefile.am configure.ac bootstrap);
# Not scanned: this script and doc/README.md, whose examples are
# examples.
my %skip = map { $_ => 1 } qw(tests/check-citations.sh doc/README.md);

my @files;
for my $f (@topfiles) { push @files, $f if -f "$top/$f"; }
for my $d (@dirs) {
	next unless -d "$top/$d";
	find({ no_chdir => 1, wanted => sub {
		my $p = $File::Find::name;
		if (-d $p) {
			$File::Find::prune = 1
			    if $p =~ m{/(?:\.deps|\.libs|corpus|data)$};
			return;
		}
		return unless -f $p;
		(my $rel = $p) =~ s{^\Q$top\E/}{};
		return if $skip{$rel};
		my $base = $rel; $base =~ s{.*/}{};
		if ($base =~ /\.([^.]+)$/) {
			return unless $1 =~ /^(?:c|h|am|ac|sh|bats|bash|md|txt|[0-9])$/;
		}
		push @files, $rel;
	}}, "$top/$d");
}

my (%heads, %headerr);
sub headings {
	my ($doc) = @_;
	return $heads{$doc} if exists $heads{$doc};
	my %h;
	if (open(my $fh, "<:raw", "$top/$doc")) {
		local $/ = "\n";
		my $in_code = 0;
		while (my $l = <$fh>) {
			$in_code = !$in_code if $l =~ /^```/;
			next if $in_code;
			next unless $l =~ /^(#+)[ \t]+(\d+(?:\.\d+)*)(?:[ \t]|$)/;
			my ($hashes, $n) = (length $1, $2);
			my $depth = () = $n =~ /\./g;
			push @{$headerr{$doc}}, "$doc:$.: heading $n should start with "
			    . ("#" x ($depth + 2)) if $hashes != $depth + 2;
			push @{$headerr{$doc}}, "$doc:$.: heading $n appears twice"
			    if $h{$n}++;
		}
		close $fh;
		$heads{$doc} = \%h;
	} else {
		$heads{$doc} = undef;
	}
	return $heads{$doc};
}

my ($ncite, $nfiles, @bad) = (0, 0);
my %seen;
sub cite {
	my ($file, $text, $pos, $doc, $sec) = @_;
	my $line = 1 + (substr($text, 0, $pos) =~ tr/\n//);
	return if $seen{"$file:$line:$doc:$sec"}++;
	$ncite++;
	print "# cites $file:$line: $doc $sign$sec\n" if $ENV{CITATIONS_LIST};
	my $h = headings($doc);
	if (!defined $h) {
		push @bad, "$file:$line: $doc $sign$sec: no such file";
	} elsif (!$h->{$sec}) {
		push @bad, "$file:$line: $doc $sign$sec: no such section in $doc";
	}
}

for my $file (sort @files) {
	open(my $fh, "<:raw", "$top/$file") or next;
	local $/;
	my $text = <$fh>;
	close $fh;
	next if !defined $text || $text =~ /\0/;
	my $is_c = $file =~ /\.[ch]$/;
	my $in_doc = $file =~ m{^doc/[^/]+\.md$};
	# Blank comment leaders so that a citation may run over lines.
	(my $t = $text) =~ s{^([ \t]*)(\*(?!/)|//|#+)}{$1 . (" " x length $2)}mge;
	my $before = $ncite;
	my %taken;	# positions of section signs already attributed

	# doc/NAME.md SIGN N, and its list.
	while ($t =~ m{doc/([A-Za-z0-9_.-]+\.md)\s*$sign\s*($num)}g) {
		my ($doc, $sec, $end) = ("doc/$1", $2, pos $t);
		cite($file, $text, $-[0], $doc, $sec);
		$taken{$-[2]} = 1;
		pos($t) = $end;
		while ($t =~ m{\G$listsep$sign?\s*($num)}gc) {
			cite($file, $text, $-[1], $doc, $1);
			$taken{$-[1]} = 1;
		}
		pos($t) = $end;
	}
	# Every other SIGN N: the doc named last before it.
	my @mentions;
	while ($t =~ m{doc/([A-Za-z0-9_.-]+\.md)|(format\s+map)}gi) {
		push @mentions, [$-[0], defined $1 ? "doc/$1" : "doc/format.md"];
	}
	while ($t =~ m{$sign\s*($num)}g) {
		next if $taken{$-[1]};
		my ($p, $doc) = ($-[0], $in_doc ? $file : "doc/format.md");
		if (!$in_doc) {
			for my $m (@mentions) {
				last if $m->[0] > $p;
				$doc = $m->[1];
			}
		}
		cite($file, $text, $-[1], $doc, $1);
	}
	# Legacy: format map [section[s]] N[, N...].
	while ($t =~ m{format\s+map(?:\x27s)?\s+(?:sections?\s+)?($num(?:$listsep$num)*)}gi) {
		my ($list, $at) = ($1, $-[1]);
		while ($list =~ m{($num)}g) {
			cite($file, $text, $at + $-[1], "doc/format.md", $1);
		}
	}
	# Legacy, C sources: section[s] N[, N...].
	if ($is_c) {
		while ($t =~ m{\bsections?\s+($num(?:$listsep$num)*)}gi) {
			my ($list, $at) = ($1, $-[1]);
			while ($list =~ m{($num)}g) {
				cite($file, $text, $at + $-[1], "doc/format.md", $1);
			}
		}
	}
	$nfiles++ if $ncite > $before;
}

# Headings of every doc, cited or not, must follow the rules.
for my $doc (glob("$top/doc/*.md")) {
	(my $rel = $doc) =~ s{^\Q$top\E/}{};
	headings($rel);
}
for my $doc (sort keys %headerr) { push @bad, @{$headerr{$doc}}; }
my %u; @bad = grep { !$u{$_}++ } @bad;
print "$_\n" for @bad;
print "# $ncite citations in $nfiles files\n";
exit(@bad ? 1 : 0);
' "$1"
}

echo "1..2"
fail=0

# 1: the checker finds a citation of a missing section (and of a file
# that does not exist), and passes the good ones.
scratch=$(mktemp -d "${TMPDIR:-/tmp}/r4cite.XXXXXX") || exit 1
trap 'rm -rf "$scratch"' EXIT
mkdir -p "$scratch/doc" "$scratch/format"
printf '# T\n## 1 One\n### 1.2 Sub\n' >"$scratch/doc/format.md"
printf '/* format map section 1.2, doc/format.md \302\2471 and\n * \302\2471.3 */\n' \
	>"$scratch/format/a.c"
printf '/* doc/nothere.md \302\2471 */\n' >"$scratch/format/b.h"
out=$(check "$scratch")
if [ $? -ne 0 ] &&
   printf '%s\n' "$out" | grep -q '^format/a.c:2: doc/format.md .*1\.3: no such section' &&
   printf '%s\n' "$out" | grep -q '^format/b.h:1: doc/nothere.md .*: no such file' &&
   [ "$(printf '%s\n' "$out" | grep -c 'no such')" -eq 2 ]; then
	echo "ok 1 - a citation of a missing section or doc fails the check"
else
	echo "not ok 1 - the checker did not report exactly the two bad citations"
	fail=1
	printf '%s\n' "$out" | sed 's/^/# /'
fi

# 2: the tree.
out=$(check "$top")
rc=$?
printf '%s\n' "$out" | sed 's/^\([^#]\)/# \1/'
if [ $rc -eq 0 ]; then
	echo "ok 2 - every citation resolves to a heading of its doc"
else
	echo "not ok 2 - citations without a section (file:line above)"
	fail=1
fi
exit $fail

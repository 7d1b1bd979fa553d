#!/usr/bin/perl
# SPDX-License-Identifier: GPL-2.0-or-later
# jansson reference check: a value handed to a call that steals its
# reference must not be released again by the caller.
#
# jansson's *_new setters (json_object_set_new, json_array_append_new, ...)
# and json_pack's "o" conversion take over the caller's reference, on
# success and on failure alike.  A later json_decref() of the same variable
# in the same function, with no assignment to it in between, releases the
# value twice: a use-after-free that shows only when the container is freed.
# This script reads C files as text (comments and strings aside), finds each
# steal and each later decref of the same expression, and prints
# `file:line: ...` for every pair; exit 1 if any.  It follows statements in
# order, not control flow: a decref on a branch the steal cannot reach is
# marked on its line with the comment `jansson-refs: other path`.
#
#   perl tests/lint/jansson-refs.pl FILE...
use strict;
use warnings;

# Setter name => index (from 0) of the argument whose reference is stolen.
my %steals = (
    json_object_set_new         => 2,
    json_object_set_new_nocheck => 2,
    json_object_setn_new        => 3,
    json_object_setn_new_nocheck => 3,
    json_object_iter_set_new    => 2,
    json_array_append_new       => 1,
    json_array_insert_new       => 2,
    json_array_set_new          => 2,
);

my $found = 0;

# Blank out comments and the insides of character constants, keeping line
# breaks so that offsets still map to lines; string literals are kept for
# json_pack's format but their contents never match an identifier search
# because the search below skips them.
sub strip_comments {
    my ($src) = @_;
    my $out = '';
    my $n = length $src;
    my $i = 0;
    while ($i < $n) {
        my $c = substr($src, $i, 1);
        my $two = substr($src, $i, 2);
        if ($two eq '/*') {
            my $end = index($src, '*/', $i + 2);
            $end = $n - 2 if $end < 0;
            my $body = substr($src, $i, $end + 2 - $i);
            (my $blank = $body) =~ s/[^\n]/ /g;
            $out .= $blank;
            $i = $end + 2;
        } elsif ($two eq '//') {
            my $end = index($src, "\n", $i);
            $end = $n if $end < 0;
            $out .= ' ' x ($end - $i);
            $i = $end;
        } elsif ($c eq '"' || $c eq "'") {
            my $j = $i + 1;
            while ($j < $n && substr($src, $j, 1) ne $c) {
                $j++ if substr($src, $j, 1) eq '\\';
                $j++;
            }
            $out .= substr($src, $i, $j + 1 - $i);
            $i = $j + 1;
        } else {
            $out .= $c;
            $i++;
        }
    }
    return $out;
}

# Split the text from offset $open (just after a '(') into its top-level
# arguments; returns (list of [text, offset], offset after the ')').
sub call_args {
    my ($text, $open) = @_;
    my @args;
    my ($depth, $start, $i) = (0, $open, $open);
    my $n = length $text;
    while ($i < $n) {
        my $c = substr($text, $i, 1);
        if ($c eq '"' || $c eq "'") {
            my $j = $i + 1;
            while ($j < $n && substr($text, $j, 1) ne $c) {
                $j++ if substr($text, $j, 1) eq '\\';
                $j++;
            }
            $i = $j + 1;
            next;
        }
        if ($c eq '(' || $c eq '[' || $c eq '{') {
            $depth++;
        } elsif ($c eq ')' || $c eq ']' || $c eq '}') {
            if ($depth == 0) {
                push @args, [substr($text, $start, $i - $start), $start];
                return (\@args, $i + 1);
            }
            $depth--;
        } elsif ($c eq ',' && $depth == 0) {
            push @args, [substr($text, $start, $i - $start), $start];
            $start = $i + 1;
        }
        $i++;
    }
    return (\@args, $n);
}

# The indexes (from 0, counted after the format) of the arguments that a
# json_pack format steals with "o" (and "o?", "o*").
sub pack_stolen {
    my ($fmt) = @_;
    my @idx;
    my $arg = 0;
    my @chars = split //, $fmt;
    for (my $k = 0; $k < @chars; $k++) {
        my $c = $chars[$k];
        my $next = $k + 1 < @chars ? $chars[$k + 1] : '';
        if ($c eq 's') {
            $arg++;
            if ($next eq '#' || $next eq '%') {
                $arg++;
                $k++;
            }
            while ($k + 1 < @chars && $chars[$k + 1] eq '+') {
                $k++;
                $arg++;
                if ($k + 1 < @chars && $chars[$k + 1] =~ /[#%]/) {
                    $k++;
                    $arg++;
                }
            }
        } elsif ($c =~ /[bifIO]/) {
            $arg++;
        } elsif ($c eq 'o') {
            push @idx, $arg;
            $arg++;
        }
    }
    return @idx;
}

# A stolen argument we can follow: a plain variable or a member path.
sub trackable {
    my ($e) = @_;
    $e =~ s/^\s+|\s+$//g;
    return $e =~ /^[A-Za-z_]\w*(?:\s*(?:->|\.)\s*[A-Za-z_]\w*)*$/ ? $e : undef;
}

sub line_of {
    my ($text, $off) = @_;
    return 1 + (substr($text, 0, $off) =~ tr/\n//);
}

sub check_function {
    my ($file, $text, $raw, $from, $to) = @_;
    my $body = substr($text, $from, $to - $from);
    my @events;    # [offset, kind, expr]

    while ($body =~ /\b(json_\w+)\s*\(/g) {
        my $name = $1;
        my $open = pos($body);
        my ($args) = call_args($body, $open);
        if (exists $steals{$name}) {
            my $a = $args->[$steals{$name}];
            my $e = $a ? trackable($a->[0]) : undef;
            push @events, [$from + $open, 'steal', $e, $name] if defined $e;
        } elsif ($name =~ /^json_pack(_ex)?$/) {
            my $fi = $name eq 'json_pack' ? 0 : 2;
            my $f = $args->[$fi];
            next unless $f && $f->[0] =~ /^\s*"((?:[^"\\]|\\.)*)"\s*$/;
            for my $k (pack_stolen($1)) {
                my $a = $args->[$fi + 1 + $k];
                my $e = $a ? trackable($a->[0]) : undef;
                push @events, [$from + $open, 'steal', $e, 'json_pack "o"']
                    if defined $e;
            }
        } elsif ($name eq 'json_decref') {
            my $e = $args->[0] ? trackable($args->[0][0]) : undef;
            push @events, [$from + $open, 'decref', $e] if defined $e;
        } elsif ($name eq 'json_incref') {
            my $e = $args->[0] ? trackable($args->[0][0]) : undef;
            push @events, [$from + $open, 'incref', $e] if defined $e;
        }
    }
    # Assignments end what a steal said about a variable.
    while ($body =~ /([A-Za-z_]\w*(?:\s*(?:->|\.)\s*[A-Za-z_]\w*)*)\s*=(?!=)/g)
    {
        my $e = $1;
        my $before = substr($body, 0, $-[0]);
        next if $before =~ /[!<>=]\s*$/;
        $e =~ s/\s+//g;
        push @events, [$from + $-[0], 'assign', $e];
    }
    # Jumps: what is stolen at a label is what was stolen at the gotos to
    # it, and what falls through unless the statement before ends the path.
    while ($body =~ /\bgoto\s+([A-Za-z_]\w*)\s*;/g) {
        push @events, [$from + $-[0], 'goto', $1];
    }
    while ($body =~ /(?:^|[;{}])\s*([A-Za-z_]\w*)\s*:(?!:)/g) {
        my ($label, $at) = ($1, $-[1]);
        next if $label =~ /^(?:default|case|public|private)$/;
        my $before = substr($body, 0, $at);
        my $ends = $before =~ /\b(?:return|goto|break|continue)\b[^;{}]*;\s*$/;
        push @events, [$from + $at, 'label', $label, $ends];
    }
    @events = sort { $a->[0] <=> $b->[0] } @events;

    my %stolen;    # expr => [line, how]
    my %at_goto;   # label => { expr => [line, how] }
    for my $ev (@events) {
        my ($off, $kind, $e) = @$ev;
        if ($kind eq 'goto') {
            $at_goto{$e}{$_} = $stolen{$_} for keys %stolen;
            next;
        }
        if ($kind eq 'label') {
            %stolen = () if $ev->[3];
            %stolen = (%stolen, %{$at_goto{$e} // {}});
            next;
        }
        $e =~ s/\s+//g;
        if ($kind eq 'steal') {
            $stolen{$e} = [line_of($text, $off), $ev->[3]];
        } elsif ($kind eq 'assign' || $kind eq 'incref') {
            delete $stolen{$e};
        } elsif ($kind eq 'decref' && $stolen{$e}) {
            my $line = line_of($text, $off);
            my @lines = split /\n/, $raw, -1;
            next if ($lines[$line - 1] // '') =~ /jansson-refs: other path/;
            printf "%s:%d: json_decref(%s) after %s took its reference at "
                . "line %d\n", $file, $line, $e, $stolen{$e}[1],
                $stolen{$e}[0];
            $found++;
        }
    }
}

for my $file (@ARGV) {
    open my $fh, '<', $file or die "jansson-refs: $file: $!\n";
    local $/;
    my $raw = <$fh>;
    close $fh;
    my $text = strip_comments($raw);
    # Function bodies: a '{' at depth 0 that follows a ')'.
    my ($depth, $start) = (0, -1);
    for (my $i = 0; $i < length $text; $i++) {
        my $c = substr($text, $i, 1);
        if ($c eq '"' || $c eq "'") {
            my $j = $i + 1;
            while ($j < length $text && substr($text, $j, 1) ne $c) {
                $j++ if substr($text, $j, 1) eq '\\';
                $j++;
            }
            $i = $j;
            next;
        }
        if ($c eq '{') {
            if ($depth == 0) {
                my $before = substr($text, 0, $i);
                $start = $before =~ /\)\s*$/ ? $i + 1 : -1;
            }
            $depth++;
        } elsif ($c eq '}') {
            $depth-- if $depth > 0;
            if ($depth == 0 && $start >= 0) {
                check_function($file, $text, $raw, $start, $i);
                $start = -1;
            }
        }
    }
}
exit($found ? 1 : 0);

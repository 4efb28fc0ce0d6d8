# perl verify.pl SECRET BODY_FILE SIGNATURE: exit 0 when SIGNATURE is the
# noticesd signature of the file's bytes, 1 otherwise.
use strict;
use warnings;
use Digest::SHA qw(hmac_sha256_hex);

# valid_signature checks an X-Notices-Signature header against the raw body.
sub valid_signature {
    my ($secret, $raw_body, $header) = @_;
    my $want = 'sha256=' . hmac_sha256_hex($raw_body, $secret);
    return 0 unless defined $header && length($header) == length($want);
    my $diff = 0;
    $diff |= ord(substr($header, $_, 1)) ^ ord(substr($want, $_, 1)) for 0 .. length($want) - 1;
    return $diff == 0;
}

my ($secret, $file, $header) = @ARGV;
open(my $fh, '<:raw', $file) or exit 1;
my $body = do { local $/; <$fh> };
exit(valid_signature($secret, $body, $header) ? 0 : 1);

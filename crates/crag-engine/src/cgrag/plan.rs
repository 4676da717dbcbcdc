//! The decision of CGRAG, pure: after a pass's gap detection, stop (and why) or fetch the gaps
//! and run another pass.
//!
//! [`next`] reads only what the pass left ([`PassView`]) and the pass limit; the loop in
//! `ask.rs` runs the step it names. Nothing here does IO.

use super::StopReason;

/// What a pass's gap detection left, as far as the decision needs it.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub(crate) struct PassView {
    /// 1-based number of the pass that just ran.
    pub pass: usize,
    /// The detector failed and the fail mode is open.
    pub detector_failed: bool,
    /// Gaps the detector named (before skipping known ones).
    pub named: usize,
    /// Gaps skipped: known not to exist, or external to the corpus.
    pub skipped: usize,
    /// Gaps left to retrieve.
    pub pending: usize,
}

/// The step after a pass.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Next {
    /// Retrieve the pending gaps, then run the next pass.
    Fetch,
    /// End the loop.
    Stop(StopReason),
}

/// The step after the pass `view` describes, with at most `max_passes` passes.
pub(crate) fn next(view: PassView, max_passes: usize) -> Next {
    if view.detector_failed {
        Next::Stop(StopReason::DetectorFailed)
    } else if view.named == 0 && view.skipped == 0 {
        Next::Stop(StopReason::NoGaps)
    } else if view.pending == 0 {
        Next::Stop(StopReason::AllNotFound)
    } else if view.pass >= max_passes {
        Next::Stop(StopReason::MaxPasses)
    } else {
        Next::Fetch
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn view(pass: usize, named: usize, skipped: usize, pending: usize) -> PassView {
        PassView {
            pass,
            detector_failed: false,
            named,
            skipped,
            pending,
        }
    }

    #[test]
    fn pending_gaps_are_fetched_until_the_last_pass() {
        assert_eq!(next(view(1, 2, 0, 2), 3), Next::Fetch);
        assert_eq!(next(view(2, 1, 0, 1), 3), Next::Fetch);
        assert_eq!(next(view(3, 1, 0, 1), 3), Next::Stop(StopReason::MaxPasses));
        assert_eq!(next(view(1, 1, 0, 1), 1), Next::Stop(StopReason::MaxPasses));
    }

    #[test]
    fn no_gap_named_or_skipped_stops_with_no_gaps() {
        assert_eq!(next(view(1, 0, 0, 0), 3), Next::Stop(StopReason::NoGaps));
        assert_eq!(next(view(3, 0, 0, 0), 3), Next::Stop(StopReason::NoGaps));
    }

    #[test]
    fn only_known_missing_or_external_gaps_stop_with_all_not_found() {
        assert_eq!(
            next(view(1, 2, 2, 0), 3),
            Next::Stop(StopReason::AllNotFound)
        );
        // External names alone (none named as gaps) count as skipped, not as no gaps.
        assert_eq!(
            next(view(1, 0, 1, 0), 3),
            Next::Stop(StopReason::AllNotFound)
        );
    }

    #[test]
    fn a_failed_detector_stops_whatever_else_the_view_says() {
        let failed = PassView {
            detector_failed: true,
            ..view(1, 0, 0, 0)
        };
        assert_eq!(next(failed, 3), Next::Stop(StopReason::DetectorFailed));
    }
}

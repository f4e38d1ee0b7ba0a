// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once

namespace ensemble {

// The version both programs print for --version and the app's About box shows: project()'s
// version and, for a build from a git checkout, `git describe` after it, e.g.
// "0.2.0 (git a3068d2)". Defined in a file the build writes (cmake/write_version.cmake).
const char* versionText();

}  // namespace ensemble

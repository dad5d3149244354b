//! A flake that looks like nixpkgs to the evaluator, at any size: a small
//! lib (`fix`, `extends`, `makeOverridable`, a `callPackage` that fills a
//! package's arguments from the set), the package set as an overlay
//! fixpoint, every package in a file of its own that is imported, and
//! string-heavy derivation attributes. Profiles, counters and scale curves
//! then mean what they would on a real package set (`lab gen-flake --shape
//! nixpkgs`); the default shape stays the flat one.

use std::fmt::Write as _;

const LIB: &str = r#"# A small lib with nixpkgs' evaluation patterns.
rec {
  fix = f: let x = f x; in x;
  extends = overlay: f: final: let prev = f final; in prev // overlay final prev;
  makeOverridable = f: args:
    let result = f args;
    in result // { override = newArgs: makeOverridable f (args // newArgs); };
  callPackageWith = autoArgs: fn: args:
    let
      f = if builtins.isFunction fn then fn else import fn;
      wanted = builtins.functionArgs f;
    in makeOverridable f (builtins.intersectAttrs wanted autoArgs // args);
  concatMapStrings = f: list: builtins.concatStringsSep "" (map f list);
  optionalString = cond: s: if cond then s else "";
  makeBinPath = paths: builtins.concatStringsSep ":" (map (p: "${p}/bin") paths);
}
"#;

const MK_DERIVATION: &str = r#"# mkDerivation: string-heavy attributes, as stdenv's are.
{ lib, system }:
{ pname, version, deps ? [ ], extra ? "", doCheck ? false }:
let
  name = "${pname}-${version}";
  phases = builtins.genList (i: "phase ${toString i} of ${name}: ${extra}") 12;
in
builtins.derivation {
  inherit name system;
  builder = "/bin/sh";
  args = [ "-c" "echo \"$buildPhase\" > $out" ];
  PATH = lib.makeBinPath deps;
  buildPhase = builtins.concatStringsSep "\n" phases;
  depNames = lib.concatMapStrings (d: "${d.name} ") deps;
  checkPhase = lib.optionalString doCheck "make check ${name}";
  meta = builtins.toJSON { description = "package ${name}"; inherit version; };
}
"#;

/// The files of a nixpkgs-shaped flake with a package for each of
/// `graph`'s, depending on each other as it says (`shape::generate` for
/// `seed`): (relative path, text).
pub fn nixpkgs_flake_files(graph: &crate::shape::Graph, seed: u64) -> Vec<(String, String)> {
    let count = graph.deps.len() as u32;
    let mut files =
        vec![("lib.nix".to_string(), LIB.to_string()), ("mk-derivation.nix".to_string(), MK_DERIVATION.to_string())];
    let mut set = String::from(
        "# The package set: a fixpoint of the base set and an overlay, as nixpkgs is.\n{ lib, system }:\nlet\n  base = \
            final: {\n    inherit lib system;\n    callPackage = lib.callPackageWith final;\n    mkDerivation = import \
            ./mk-derivation.nix { inherit lib system; };\n",
    );
    for i in 0..count {
        let _ = writeln!(set, "    pkg{i} = final.callPackage ./pkgs/pkg{i}.nix {{ }};");
    }
    set.push_str(
        "  };\n  # An overlay that changes a package the way users do.\n  overlay = final: prev: {\n    pkg0 = \
            prev.pkg0.override { extra = \"from the overlay\"; };\n  };\nin\nlib.fix (lib.extends overlay base)\n",
    );
    files.push(("pkgs.nix".to_string(), set));
    for i in 0..count {
        let deps: Vec<String> = graph.deps[i as usize].iter().map(|d| format!("pkg{d}")).collect();
        let mut args = vec!["mkDerivation".to_string()];
        args.extend(deps.iter().cloned());
        let text = format!(
            "{{ {}, extra ? \"\" }}:\nmkDerivation {{\n  pname = \"pkg{i}\";\n  version = \"1.{i}\";\n  deps = [ {} \
                ];\n  inherit extra;\n  doCheck = {};\n}}\n",
            args.join(", "),
            deps.join(" "),
            if i % 3 == 0 { "true" } else { "false" }
        );
        files.push((format!("pkgs/pkg{i}.nix"), text));
    }
    let mut names = String::new();
    for i in 0..count {
        let _ = write!(names, " \"pkg{i}\"");
    }
    files.push((
        "flake.nix".to_string(),
        format!(
            concat!(
                r#"{{
  description = "evalbench flake: {count} packages in the shape of nixpkgs (lib, callPackage, an overlay "#,
                concat!(
                    r#"fixpoint, a file per package; seed {seed})";

  outputs = {{ self }}:
    let
      system = "x86_64-linux";
      lib = import ./lib.nix;
      pkgs = import ./pkgs.nix {{ inherit lib system; }};
      names = [{names} ];
    in
    {{
      packages.${{system}} = builtins.listToAttrs (map (n: {{ name = n; value = pkgs.${{n}}; }}) names) "#,
                    r#"// {{ default = pkgs.pkg{last}; }};
    }};
}}
"#
                )
            ),
            count = count,
            names = names,
            seed = seed,
            last = count - 1
        ),
    ));
    files
}

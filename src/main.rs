fn main() -> std::process::ExitCode {
    unipi_tui::run()
}
